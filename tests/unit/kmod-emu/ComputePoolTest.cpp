// SPDX-License-Identifier: Apache-2.0
// The compute pool in-process, with real threads: holders never exceed its cores, a wide run is
// not starved by narrow ones, and a cancelled wait gives its turn away at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ComputePool.hpp"

namespace qaic::emu {
namespace {

using namespace std::chrono_literals;

TEST(ComputePool, NeverMoreThanItsCores) {
  ComputePool pool(hostCores());
  const std::atomic<bool> never{false};
  std::atomic<unsigned> inside{0}, mostInside{0};
  std::vector<std::thread> runs;
  for (int t = 0; t < 6; ++t)
    runs.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        const auto lease = pool.acquire(1 + static_cast<unsigned>(t % 3), never);
        ASSERT_TRUE(lease);
        const unsigned now = inside += lease.threads();
        unsigned seen = mostInside.load();
        while (now > seen && !mostInside.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        inside -= lease.threads();
      }
    });
  for (auto& r : runs) r.join();
  EXPECT_LE(mostInside.load(), pool.cores());
  EXPECT_LE(pool.busyMax(), pool.cores());
  EXPECT_EQ(pool.busy(), 0u);
}

TEST(ComputePool, ThreadsAreClampedToThePool) {
  ComputePool pool(1);
  EXPECT_EQ(pool.cores(), 1u);
  EXPECT_EQ(pool.threadsFor(4), 1u);
  EXPECT_EQ(pool.threadsFor(0), 1u);
  const std::atomic<bool> never{false};
  const auto lease = pool.acquire(8, never);
  EXPECT_EQ(lease.threads(), 1u);
  EXPECT_EQ(pool.busy(), 1u);
}

TEST(ComputePool, ZeroMeansTheHostsCores) { EXPECT_EQ(ComputePool(0).cores(), hostCores()); }

TEST(ComputePool, WaitersAreServedInOrder) {
  ComputePool pool(1);
  const std::atomic<bool> never{false};
  auto first = std::make_unique<ComputePool::Lease>(pool.acquire(1, never));
  std::vector<int> order;
  std::mutex orderMutex;
  std::vector<std::thread> waiters;
  for (int w = 0; w < 3; ++w) {
    waiters.emplace_back([&, w] {
      const auto lease = pool.acquire(1, never, 5ms);
      std::lock_guard lock(orderMutex);
      order.push_back(w);
    });
    // Each waiter has taken its ticket before the next one starts.
    std::this_thread::sleep_for(50ms);
  }
  first.reset();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(ComputePool, CancelledWaitGivesItsTurnAway) {
  ComputePool pool(1);
  const std::atomic<bool> never{false};
  std::atomic<bool> cancel{false};
  auto holder = std::make_unique<ComputePool::Lease>(pool.acquire(1, never));
  std::atomic<bool> cancelledReturned{false}, laterServed{false};
  std::thread cancelled([&] {
    const auto lease = pool.acquire(1, cancel, 5ms);
    EXPECT_FALSE(lease);
    cancelledReturned = true;
  });
  std::this_thread::sleep_for(50ms);
  std::thread later([&] {
    const auto lease = pool.acquire(1, never, 5ms);
    EXPECT_TRUE(lease);
    laterServed = true;
  });
  std::this_thread::sleep_for(50ms);
  cancel = true;
  cancelled.join();
  EXPECT_TRUE(cancelledReturned.load());
  EXPECT_FALSE(laterServed.load());  // the holder still holds the only core
  holder.reset();
  later.join();
  EXPECT_TRUE(laterServed.load());
  EXPECT_EQ(pool.busy(), 0u);
}

TEST(ComputePool, ASuspendedLeaseLendsItsThreadsAndTakesThemBackInTurn) {
  ComputePool pool(1);
  const std::atomic<bool> never{false};
  auto waiting = pool.acquire(1, never);  // a part waiting in a collective
  ASSERT_TRUE(waiting);
  waiting.suspend();
  EXPECT_EQ(pool.busy(), 0u);
  auto other = std::make_unique<ComputePool::Lease>(pool.acquire(1, never, 5ms));  // another part computes
  EXPECT_EQ(pool.busy(), 1u);
  std::atomic<bool> resumed{false};
  std::thread resume([&] {
    EXPECT_TRUE(waiting.resume(never));
    resumed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(resumed.load()) << "resumed while the only core was lent out";
  other.reset();
  resume.join();
  EXPECT_TRUE(waiting);
  EXPECT_EQ(pool.busy(), 1u);
}

TEST(ComputePool, ACancelledResumeHoldsNothing) {
  ComputePool pool(1);
  const std::atomic<bool> never{false};
  const std::atomic<bool> stopping{true};
  {
    auto lease = pool.acquire(1, never);
    lease.suspend();
    auto holder = pool.acquire(1, never);
    EXPECT_FALSE(lease.resume(stopping));
    EXPECT_FALSE(lease);
    EXPECT_EQ(pool.busy(), 1u);
  }
  EXPECT_EQ(pool.busy(), 0u) << "a lease given back twice, or never";
}

}  // namespace
}  // namespace qaic::emu
