// SPDX-License-Identifier: Apache-2.0
#include "kubelet/InventoryChannel.hpp"

namespace qaic::qaicd {

void InventoryChannel::publish(Inventory inventory) {
  {
    std::lock_guard lock(mutex_);
    inventory.generation = ++generation_;
    current_ = std::make_shared<const Inventory>(std::move(inventory));
  }
  changed_.notify_all();
}

std::shared_ptr<const Inventory> InventoryChannel::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

std::shared_ptr<const Inventory> InventoryChannel::waitNewer(uint64_t seen, std::chrono::milliseconds timeout,
                                                             const std::atomic<bool>& stop) const {
  std::unique_lock lock(mutex_);
  const bool newer = changed_.wait_for(lock, timeout, [&] { return stop.load() || (current_ && generation_ > seen); });
  if (!newer || stop.load()) return nullptr;
  return current_;
}

void InventoryChannel::wake() const {
  // Taking the mutex orders the caller's `stop` store before any waiter's next predicate check.
  { std::lock_guard lock(mutex_); }
  changed_.notify_all();
}

}  // namespace qaic::qaicd
