// SPDX-License-Identifier: Apache-2.0
#include "Semaphores.hpp"

namespace qaic::emu {

Semaphores::Result Semaphores::execute(uint32_t word, std::chrono::milliseconds timeout) {
  if (!driver::semEnabled(word)) return Result::Ok;
  const uint8_t index = driver::semIndex(word);
  const uint16_t val = driver::semVal(word);
  std::unique_lock lock(mutex_);
  uint16_t& sem = values_[index];
  auto waitFor = [&](auto ready) {
    if (!changed_.wait_for(lock, timeout, [&] { return cancelled_ || ready(); })) return Result::TimedOut;
    return cancelled_ ? Result::Cancelled : Result::Ok;
  };
  switch (driver::semCmd(word)) {
    case QAIC_SEM_NOP: return Result::Ok;
    case QAIC_SEM_INIT: sem = val; break;
    case QAIC_SEM_INC: sem = (sem + 1) & driver::kSemaphoreMax; break;
    case QAIC_SEM_DEC: sem = sem > 0 ? sem - 1 : 0; break;  // saturates: see device-protocol.md 6
    case QAIC_SEM_WAIT_EQUAL: return waitFor([&] { return sem == val; });
    case QAIC_SEM_WAIT_GT_EQ: return waitFor([&] { return sem >= val; });
    case QAIC_SEM_WAIT_GT_0: return waitFor([&] { return sem > 0; });
    default: return Result::BadCommand;
  }
  changed_.notify_all();
  return Result::Ok;
}

bool Semaphores::satisfied(uint32_t word) {
  if (!driver::semEnabled(word)) return true;
  const uint16_t val = driver::semVal(word);
  std::lock_guard lock(mutex_);
  if (cancelled_) return true;  // a cancelled wait returns at once too
  const uint16_t sem = values_[driver::semIndex(word)];
  switch (driver::semCmd(word)) {
    case QAIC_SEM_WAIT_EQUAL: return sem == val;
    case QAIC_SEM_WAIT_GT_EQ: return sem >= val;
    case QAIC_SEM_WAIT_GT_0: return sem > 0;
    default: return true;
  }
}

void Semaphores::increment(uint8_t index) {
  {
    std::lock_guard lock(mutex_);
    uint16_t& sem = values_[index % driver::kSemaphoresPerDbc];
    sem = (sem + 1) & driver::kSemaphoreMax;
  }
  changed_.notify_all();
}

uint16_t Semaphores::value(uint8_t index) {
  std::lock_guard lock(mutex_);
  return values_[index % driver::kSemaphoresPerDbc];
}

void Semaphores::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  changed_.notify_all();
}

}  // namespace qaic::emu
