// SPDX-License-Identifier: Apache-2.0
// A synchronous waiter (waitForCompletion on a handle, getCompletedId for one handle) that waits
// on the device's response interrupt itself instead of on the completion thread: the device
// wakes it directly through the DBC window's response futex and it drains the response FIFO on
// its own thread (docs/device-protocol.md section 3). That takes the completion thread's wake-up
// off the round trip: a tiny synchronous inference costs one context switch less.
//
// At most one thread of a queue leads at a time; other waiters wait on their handle's condition
// as before, and the leader completes their handles too while it drains. Anything that completes
// a handle on another thread (a pipeline thread, the completion thread at a deadline, a shutdown)
// calls wake(), so the leader never sleeps past its handle's completion. On the polling data path
// the leader spins on the response tail for the device's poll interval before it sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "driver/DbcWindow.hpp"
#include "driver/WindowFutex.hpp"

namespace qaic::rt {

// The polling data path (datapath_polling): how long a host thread spins on the response tail
// before it sleeps, as long as the device spins on the request tail.
inline constexpr std::chrono::microseconds kHostSpin{1000};

class InterruptLeader {
 public:
  using Clock = std::chrono::steady_clock;

  // False when another thread leads. The window stays mapped while this thread leads.
  bool tryLead(std::shared_ptr<driver::DbcWindow> window);
  void stopLeading();

  // Leader only. Read the ticket, then check what is awaited, then await(ticket): a device
  // response or a wake() after the ticket was read ends the wait at once.
  uint32_t ticket() const { return window_->responseFutexValue(); }
  // Sleeps until a response, a wake(), `deadline` or `longestSleep`, whichever comes first. The
  // leader then drains the responses (RequestRing::drain): the device raises no eventfd for
  // those it pushed while the leader was announced.
  void await(uint32_t ticket, Clock::time_point deadline, std::chrono::milliseconds longestSleep);

  // Any thread: makes the leader re-check (no-op without a leader or on the leader itself).
  void wake();
  bool leading() const { return leading_.load(); }

  // The queue's requests in flight (its RequestRing says so on every change). On the polling data
  // path the leader spins only while at most its own request is in flight: behind others the
  // wait is long and the CPU is better left to the threads that prepare the next requests.
  void setRequestsInFlight(std::size_t count) { inFlight_.store(count, std::memory_order_relaxed); }

  // Waiters spinning for their handle on the polling data path (they drain what they see, so the
  // completion thread need not spin as well).
  class Spinning {
   public:
    explicit Spinning(InterruptLeader& leader) : leader_(leader) { leader_.spinners_.fetch_add(1); }
    ~Spinning() { leader_.spinners_.fetch_sub(1); }
    Spinning(const Spinning&) = delete;
    Spinning& operator=(const Spinning&) = delete;

   private:
    InterruptLeader& leader_;
  };
  uint32_t spinners() const { return spinners_.load(std::memory_order_relaxed); }
  // Whether those spins find their completions, shared by the queue's waiters: one waiter's
  // success puts them all back to spinning. Per thread, a spin that ran out during a burst of
  // load kept each thread on the sleeping path, where completions come too late for its short
  // probes, and Throughput/threads:4 stayed at a third of its rate (bimodal runs).
  driver::AdaptiveSpin& waiterSpin() { return waiterSpin_; }

 private:
  std::atomic<bool> leading_{false};
  // The leader is in (or about to enter) its futex wait: only then does wake() need the system
  // call. Set before the wait, whose in-kernel comparison of the word then sees any wake()'s
  // change that did not see the flag.
  std::atomic<bool> asleep_{false};
  std::atomic<std::size_t> inFlight_{0};
  std::atomic<uint32_t> spinners_{0};
  driver::AdaptiveSpin waiterSpin_;
  driver::AdaptiveSpin spin_;  // the leader's only (leading_ orders one leader after another)
  std::mutex mutex_;           // guards window_ and leader_ against wake()
  std::shared_ptr<driver::DbcWindow> window_;
  std::thread::id leader_;
};

}  // namespace qaic::rt
