// SPDX-License-Identifier: Apache-2.0
// The 32 twelve-bit semaphores of one DBC. Waits are bounded and end early when the channel is
// cancelled, so a missing INC shows up as a completion code, never as a hung channel.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {

class Semaphores {
 public:
  enum class Result { Ok, TimedOut, Cancelled, BadCommand };

  // Executes one encoded semaphore command (driver::encodeSem). Wait commands block up to
  // `timeout`.
  Result execute(uint32_t semWord, std::chrono::milliseconds timeout);
  // Whether the wait command `semWord` would return at once (true for a non-wait command).
  bool satisfied(uint32_t semWord);
  void increment(uint8_t index);
  uint16_t value(uint8_t index);
  void cancel();  // wakes and fails every current and future wait

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::array<uint16_t, driver::kSemaphoresPerDbc> values_{};
  bool cancelled_ = false;
};

}  // namespace qaic::emu
