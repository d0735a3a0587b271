// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <thread>

#include "Semaphores.hpp"

namespace qaic::emu {
namespace {

using namespace std::chrono_literals;

uint32_t word(uint8_t cmd, uint8_t index, uint16_t val = 0) {
  return driver::encodeSem(qaic_sem{val, index, 0, cmd, 0, 0});
}

TEST(Semaphores, InitIncDecAndSaturation) {
  Semaphores s;
  EXPECT_EQ(s.execute(word(QAIC_SEM_INIT, 3, 7), 0ms), Semaphores::Result::Ok);
  EXPECT_EQ(s.value(3), 7);
  s.execute(word(QAIC_SEM_INC, 3), 0ms);
  EXPECT_EQ(s.value(3), 8);
  s.execute(word(QAIC_SEM_DEC, 4), 0ms);
  EXPECT_EQ(s.value(4), 0);  // DEC saturates at zero
}

TEST(Semaphores, WaitTimesOutWhenNothingSignals) {
  Semaphores s;
  EXPECT_EQ(s.execute(word(QAIC_SEM_WAIT_GT_0, 1), 20ms), Semaphores::Result::TimedOut);
  EXPECT_EQ(s.execute(word(QAIC_SEM_WAIT_EQUAL, 1, 0), 20ms), Semaphores::Result::Ok);
}

TEST(Semaphores, WaitEndsWhenAnotherThreadIncrements) {
  Semaphores s;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    s.increment(2);
    s.increment(2);
  });
  EXPECT_EQ(s.execute(word(QAIC_SEM_WAIT_GT_EQ, 2, 2), 10s), Semaphores::Result::Ok);
  t.join();
}

TEST(Semaphores, CancelWakesWaiters) {
  Semaphores s;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    s.cancel();
  });
  EXPECT_EQ(s.execute(word(QAIC_SEM_WAIT_GT_0, 0), 10s), Semaphores::Result::Cancelled);
  t.join();
}

}  // namespace
}  // namespace qaic::emu
