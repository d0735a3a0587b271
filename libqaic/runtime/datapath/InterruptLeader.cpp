// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/InterruptLeader.hpp"

#include <algorithm>

namespace qaic::rt {

bool InterruptLeader::tryLead(std::shared_ptr<driver::DbcWindow> window) {
  bool expected = false;
  if (!window || !leading_.compare_exchange_strong(expected, true)) return false;
  std::lock_guard lock(mutex_);
  window_ = std::move(window);
  leader_ = std::this_thread::get_id();
  return true;
}

void InterruptLeader::stopLeading() {
  {
    std::lock_guard lock(mutex_);
    window_.reset();
    leader_ = {};
  }
  leading_.store(false);
}

void InterruptLeader::await(uint32_t ticket, Clock::time_point deadline, std::chrono::milliseconds longestSleep) {
  driver::DbcWindow& window = *window_;
  const auto left = [&] { return std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()); };
  // The polling data path: spin on the tail first, announced, so the device signals nothing and
  // a response that comes within the poll interval costs no wake-up at all.
  const bool polling = window.devicePolls();
  if (polling) {
    window.announceHostPolling(true);
    const auto spinFor = inFlight_.load(std::memory_order_relaxed) <= 1 ? spin_.spinFor(kHostSpin)
                                                                        : std::chrono::nanoseconds::zero();
    if (spinFor > std::chrono::nanoseconds::zero()) {
      const bool found = window.spinForResponse(ticket, std::min(spinFor, left()));
      spin_.result(found);
      if (found) {
        window.announceHostPolling(false);
        return;
      }
    }
  }
  // Announce, then look: a response the device pushed before it saw the announcement raised the
  // eventfd instead (the completion thread takes it too), and it is visible to this check.
  window.announceHostWaiting(true);
  if (!window.responsesPending()) {
    asleep_.store(true, std::memory_order_seq_cst);
    window.waitForResponse(ticket, std::clamp<std::chrono::nanoseconds>(left(), {}, longestSleep));
    asleep_.store(false, std::memory_order_relaxed);
  }
  // Withdraw; the caller's drain then finds a response pushed while the device still saw the
  // announcement, which raised no eventfd.
  window.announceHostWaiting(false);
  if (polling) window.announceHostPolling(false);
}

void InterruptLeader::wake() {
  if (!leading_.load()) return;
  std::lock_guard lock(mutex_);
  if (window_ && leader_ != std::this_thread::get_id())
    window_->wakeResponseWaiters(asleep_.load(std::memory_order_seq_cst));
}

}  // namespace qaic::rt
