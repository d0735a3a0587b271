#include <gtest/gtest.h>

#include <atomic>

#include "NspPool.hpp"

namespace qaic::emu {
namespace {

using namespace std::chrono_literals;

TEST(NspPool, JobsOfOneWorkerRunOnOneThreadInOrder) {
  NspPool pool(2);
  const unsigned w = pool.pick();
  auto first = pool.call(w, [] { return std::this_thread::get_id(); }, 5s);
  ASSERT_TRUE(first.has_value());
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.submit(w, [&order, i] { order.push_back(i); }));
  auto again = pool.call(w, [] { return std::this_thread::get_id(); }, 5s);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(NspPool, CallTimesOutBehindABusyWorker) {
  NspPool pool(1);
  std::atomic<bool> release{false};
  ASSERT_TRUE(pool.submit(0, [&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  }));
  EXPECT_FALSE(pool.call(0, [] { return 1; }, 30ms).has_value());
  release.store(true);
  EXPECT_EQ(pool.call(0, [] { return 2; }, 5s), 2);
}

TEST(NspPool, StopRunsQueuedJobsThenRefusesNewOnes) {
  NspPool pool(1);
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) pool.submit(0, [&] { ran.fetch_add(1); });
  pool.stop();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(pool.submit(0, [&] { ran.fetch_add(1); }));
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace qaic::emu
