// SPDX-License-Identifier: Apache-2.0
// WorkerPool: jobs run on at most coreThreads threads however many are queued, in the order
// posted, timers fire no earlier than asked, cancel drops what has not started, a blocking job
// lends its place, and a pool destroyed by one of its own jobs does not deadlock.
#include "runtime/datapath/WorkerPool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace qaic::rt {
namespace {

using namespace std::chrono_literals;

// A latch with a bounded wait.
class Latch {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// Counts finished jobs and waits for a number of them.
class Counter {
 public:
  void add() {
    std::lock_guard lock(mutex_);
    ++count_;
    changed_.notify_all();
  }
  bool waitFor(int count, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return count_ >= count; });
  }
  int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

TEST(WorkerPoolTest, NoThreadUntilWork) {
  WorkerPool pool("test-pool", 3);
  EXPECT_EQ(pool.coreThreads(), 3u);
  EXPECT_EQ(pool.maxThreads(), 3u * WorkerPool::kMaxThreadsPerCore);
  EXPECT_EQ(pool.startedThreads(), 0u);
}

TEST(WorkerPoolTest, DefaultSizeIsTheHostsCores) {
  WorkerPool pool("test-pool");
  EXPECT_EQ(pool.coreThreads(), std::max(2u, std::thread::hardware_concurrency()));
}

TEST(WorkerPoolTest, ThousandsOfJobsRunOnAtMostCoreThreads) {
  WorkerPool pool("test-pool", 2);
  Counter done;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  constexpr int kJobs = 5000;
  int owners[kJobs];
  for (int i = 0; i < kJobs; ++i) {
    pool.post(&owners[i], [&] {
      {
        std::lock_guard lock(mutex);
        threads.insert(std::this_thread::get_id());
      }
      done.add();
    });
  }
  ASSERT_TRUE(done.waitFor(kJobs));
  EXPECT_LE(pool.startedThreads(), 2u);
  std::lock_guard lock(mutex);
  EXPECT_LE(threads.size(), 2u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "a job ran on the posting thread";
}

TEST(WorkerPoolTest, JobsStartInTheOrderPosted) {
  WorkerPool pool("test-pool", 1);
  std::mutex mutex;
  std::vector<int> order;
  Counter done;
  for (int i = 0; i < 100; ++i) {
    pool.post(nullptr, [&, i] {
      {
        std::lock_guard lock(mutex);
        order.push_back(i);
      }
      done.add();
    });
  }
  ASSERT_TRUE(done.waitFor(100));
  std::lock_guard lock(mutex);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkerPoolTest, TimedJobsRunNoEarlierThanAsked) {
  WorkerPool pool("test-pool", 2);
  Latch ran;
  const auto asked = WorkerPool::Clock::now() + 50ms;
  WorkerPool::Clock::time_point at{};
  pool.postAt(nullptr, asked, [&] {
    at = WorkerPool::Clock::now();
    ran.open();
  });
  ASSERT_TRUE(ran.wait());
  EXPECT_GE(at, asked);
  // A later timer posted first does not delay an earlier one posted after it.
  Latch early, late;
  pool.postAt(nullptr, WorkerPool::Clock::now() + 10s, [&] { late.open(); });
  pool.postAt(nullptr, WorkerPool::Clock::now() + 20ms, [&] { early.open(); });
  EXPECT_TRUE(early.wait(5s));
  EXPECT_FALSE(late.wait(0ms));
}

TEST(WorkerPoolTest, CancelDropsTheOwnersQueuedJobsOnly) {
  WorkerPool pool("test-pool", 1);
  Latch started, release;
  pool.post(nullptr, [&] {
    started.open();
    release.wait();
  });
  ASSERT_TRUE(started.wait());
  int a = 0, b = 0;
  std::atomic<int> ranA{0}, ranB{0};
  Counter done;
  for (int i = 0; i < 10; ++i) {
    pool.post(&a, [&] { ++ranA; });
    pool.post(&b, [&] {
      ++ranB;
      done.add();
    });
  }
  pool.postAt(&a, WorkerPool::Clock::now() + 1h, [&] { ++ranA; });
  EXPECT_EQ(pool.cancel(&a), 11u);
  EXPECT_EQ(pool.cancel(&a), 0u);
  release.open();
  ASSERT_TRUE(done.waitFor(10));
  EXPECT_EQ(ranA.load(), 0);
  EXPECT_EQ(ranB.load(), 10);
}

// A thread sleeps until the earliest timer; cancelling that timer while it sleeps must not leave
// the sleeper reading the erased entry (AddressSanitizer saw it when the wait took a reference).
TEST(WorkerPoolTest, CancellingTheTimerAThreadSleepsUntilIsSafe) {
  WorkerPool pool("test-pool", 1);
  int owner = 0;
  Latch warmedUp;
  pool.post(nullptr, [&] { warmedUp.open(); });  // the thread exists and goes idle
  ASSERT_TRUE(warmedUp.wait());
  for (int i = 0; i < 20; ++i) {
    pool.postAt(&owner, WorkerPool::Clock::now() + 1h, [] {});
    std::this_thread::sleep_for(1ms);  // the idle thread now sleeps until that timer
    EXPECT_EQ(pool.cancel(&owner), 1u);
    Latch ran;
    pool.post(nullptr, [&] { ran.open(); });  // wakes the sleeper
    ASSERT_TRUE(ran.wait());
  }
}

TEST(WorkerPoolTest, ABlockingJobLendsItsPlace) {
  WorkerPool pool("test-pool", 1);
  Latch blocked, release, other;
  pool.post(nullptr, [&] {
    WorkerPool::BlockingScope scope;
    blocked.open();
    release.wait();
  });
  ASSERT_TRUE(blocked.wait());
  pool.post(nullptr, [&] { other.open(); });
  EXPECT_TRUE(other.wait(5s)) << "a job waited behind one blocked in user code";
  release.open();
  EXPECT_EQ(pool.startedThreads(), 2u);
}

TEST(WorkerPoolTest, WithoutABlockingScopeJobsWaitTheirTurn) {
  WorkerPool pool("test-pool", 1);
  Latch busy, release, other;
  pool.post(nullptr, [&] {
    busy.open();
    release.wait();
  });
  ASSERT_TRUE(busy.wait());
  pool.post(nullptr, [&] { other.open(); });
  EXPECT_FALSE(other.wait(100ms));
  release.open();
  EXPECT_TRUE(other.wait());
  EXPECT_EQ(pool.startedThreads(), 1u);
}

TEST(WorkerPoolTest, BlockingGrowthIsBounded) {
  WorkerPool pool("test-pool", 1);
  Latch release;
  Counter blocked;
  const unsigned max = pool.maxThreads();
  for (unsigned i = 0; i < max + 3; ++i) {
    pool.post(nullptr, [&] {
      WorkerPool::BlockingScope scope;
      blocked.add();
      release.wait();
    });
  }
  ASSERT_TRUE(blocked.waitFor(static_cast<int>(max)));
  EXPECT_FALSE(blocked.waitFor(static_cast<int>(max) + 1, 100ms));
  EXPECT_EQ(pool.startedThreads(), max);
  release.open();
  EXPECT_TRUE(blocked.waitFor(static_cast<int>(max) + 3));
}

TEST(WorkerPoolTest, BlockingScopeOffAPoolThreadDoesNothing) {
  WorkerPool::BlockingScope scope;  // must not crash or start anything
  SUCCEED();
}

TEST(WorkerPoolTest, AJobMayDestroyItsPool) {
  auto pool = std::make_shared<WorkerPool>("test-pool", 2);
  Latch destroyed;
  std::weak_ptr<WorkerPool> watch = pool;
  std::shared_ptr<WorkerPool>* holder = new std::shared_ptr<WorkerPool>(pool);
  pool.reset();
  (*holder)->post(nullptr, [&, holder] {
    delete holder;  // the last reference: ~WorkerPool on its own thread
    destroyed.open();
  });
  ASSERT_TRUE(destroyed.wait());
  EXPECT_TRUE(watch.expired());
}

TEST(WorkerPoolTest, DestructionDropsQueuedJobs) {
  std::atomic<int> ran{0};
  Latch started, release;
  {
    WorkerPool pool("test-pool", 1);
    pool.post(nullptr, [&] {
      started.open();
      release.wait(200ms);
    });
    ASSERT_TRUE(started.wait());
    for (int i = 0; i < 10; ++i) pool.post(nullptr, [&] { ++ran; });
    pool.postAt(nullptr, WorkerPool::Clock::now() + 1h, [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace qaic::rt
