// SPDX-License-Identifier: Apache-2.0
// The hand-off between the event loop and the gRPC threads, under threads (and TSan): readers
// see every publication in order or a newer one, never a torn one, and a stop wakes them.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "kubelet/InventoryChannel.hpp"

namespace qaic::qaicd {
namespace {

using namespace std::chrono_literals;

Inventory inventoryOf(uint32_t n) {
  Inventory inventory;
  inventory.root = "/";
  ResourceInventory r{"qualcomm.com/qaic", false, {}};
  for (uint32_t i = 0; i < n % 8; ++i) r.units.push_back(Unit{"d" + std::to_string(n), true, {}, i, i});
  inventory.resources.push_back(std::move(r));
  return inventory;
}

TEST(InventoryChannelTest, ReadersSeeNewerInventoriesInOrder) {
  InventoryChannel channel;
  std::atomic<bool> stop{false};
  constexpr uint32_t kPublications = 2000;
  std::vector<std::future<uint64_t>> readers;
  for (int r = 0; r < 3; ++r) {
    readers.push_back(std::async(std::launch::async, [&] {
      uint64_t seen = 0;
      while (seen < kPublications) {
        auto inventory = channel.waitNewer(seen, 1s, stop);
        if (!inventory) continue;
        EXPECT_GT(inventory->generation, seen);
        // A snapshot is whole: every unit carries the number it was published with.
        for (const Unit& u : inventory->resources.at(0).units)
          EXPECT_EQ(u.id, "d" + std::to_string(inventory->generation - 1));
        seen = inventory->generation;
      }
      return seen;
    }));
  }
  for (uint32_t n = 0; n < kPublications; ++n) channel.publish(inventoryOf(n));
  for (auto& r : readers) {
    ASSERT_EQ(r.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(r.get(), kPublications);
  }
  EXPECT_EQ(channel.current()->generation, kPublications);
}

TEST(InventoryChannelTest, StopWakesAWaiter) {
  InventoryChannel channel;
  channel.publish(inventoryOf(1));
  std::atomic<bool> stop{false};
  auto waiter = std::async(std::launch::async, [&] { return channel.waitNewer(1, 60s, stop); });
  std::this_thread::sleep_for(20ms);
  stop = true;
  channel.wake();
  ASSERT_EQ(waiter.wait_for(30s), std::future_status::ready) << "a stopped waiter kept waiting";
  EXPECT_EQ(waiter.get(), nullptr);
  EXPECT_EQ(channel.waitNewer(0, 0ms, stop), nullptr) << "stop wins over a newer inventory";
}

}  // namespace
}  // namespace qaic::qaicd
