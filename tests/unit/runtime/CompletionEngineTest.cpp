// SPDX-License-Identifier: Apache-2.0
// CompletionEngine against an eventfd this test writes as the device would: the loop wakes on
// interrupts and at its idle interval, and nothing the eventfd does can park it.
#include "runtime/datapath/CompletionEngine.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace qaic::rt {
namespace {

using namespace std::chrono_literals;

// Counts the engine's wake-ups; the first one can be held until the test lets it go.
class WakeRecorder {
 public:
  void onWake() {
    std::unique_lock lock(mutex_);
    ++wakes_;
    changed_.notify_all();
    if (wakes_ == 1) changed_.wait_for(lock, 30s, [&] { return released_; });
  }
  bool waitForWakes(int count, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return wakes_ >= count; });
  }
  void releaseFirst() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int wakes_ = 0;
  bool released_ = false;
};

class CompletionEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Blocking, as a caller may hand it over: the engine must not depend on the caller's flags.
    fd_ = ::eventfd(0, EFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }
  void signal() {
    const uint64_t one = 1;
    ASSERT_EQ(::write(fd_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }

  int fd_ = -1;
  WakeRecorder recorder_;
};

TEST_F(CompletionEngineTest, TheEventfdBecomesNonBlocking) {
  CompletionEngine engine(
      fd_, [] {}, [] { return CompletionEngine::Clock::time_point::max(); });
  EXPECT_NE(::fcntl(fd_, F_GETFL) & O_NONBLOCK, 0);
}

// The interrupt raised while the owner drains can have its count taken before its poll
// completion is seen (here the test takes it; in the product the loop's own reset after an
// earlier completion does). The loop then finds a completion and an empty counter; it must go
// on waking, not sleep in read() until the device happens to signal again.
TEST_F(CompletionEngineTest, AnInterruptWhoseCountWasAlreadyTakenDoesNotParkTheLoop) {
  CompletionEngine engine(
      fd_, [&] { recorder_.onWake(); }, [] { return CompletionEngine::Clock::time_point::max(); });
  signal();
  ASSERT_TRUE(recorder_.waitForWakes(1, 20s));
  signal();  // the poll posts a completion for this wake-up...
  uint64_t count = 0;
  ASSERT_EQ(::read(fd_, &count, sizeof count), static_cast<ssize_t>(sizeof count));  // ...its count gone
  recorder_.releaseFirst();
  // With nothing more from the "device" only the idle interval wakes the loop, twice within a
  // second when it is free; twenty seconds allow for a loaded machine.
  EXPECT_TRUE(recorder_.waitForWakes(3, 20s)) << "the loop stopped waking after the completion";
  engine.stop();
}

}  // namespace
}  // namespace qaic::rt
