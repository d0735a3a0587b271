// SPDX-License-Identifier: Apache-2.0
// The hand-off of inventories from the event loop to the gRPC threads: the loop publishes an
// immutable snapshot (a shared_ptr to const, swapped under a mutex held only for the swap), and
// ListAndWatch streams wait, bounded, for a newer one. The loop never waits on a reader: readers
// copy the pointer and work on the snapshot outside the lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "kubelet/Inventory.hpp"

namespace qaic::qaicd {

class InventoryChannel {
 public:
  // Stamps the next generation on `inventory` and makes it the current one.
  void publish(Inventory inventory);
  std::shared_ptr<const Inventory> current() const;
  // The current inventory once its generation exceeds `seen`; nullptr when `timeout` passes or
  // `stop` is set first (wake() makes a waiter re-check `stop` at once).
  std::shared_ptr<const Inventory> waitNewer(uint64_t seen, std::chrono::milliseconds timeout,
                                             const std::atomic<bool>& stop) const;
  void wake() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::shared_ptr<const Inventory> current_;
  uint64_t generation_ = 0;
};

}  // namespace qaic::qaicd
