// SPDX-License-Identifier: Apache-2.0
// The completion loop of one queue: a thread that waits through io_uring for the DBC's eventfd
// "interrupt" (a multishot IORING_OP_POLL_ADD, armed once) with a timeout set to the next
// data-path deadline (the wait's own timeout), then lets its owner drain every response and
// handle expired requests in one batch. Between interrupts and deadlines the thread sleeps in the
// kernel; on the polling data path it first spins a bounded time (Spin) while requests are in
// flight. The thread's futex wake-ups (a leader's, a retried request's doorbell) join the same
// ring (driver::ThreadRingLoan).
// stop() (or the destructor) wakes the thread through the same eventfd and joins it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include <qaic/Errors.hpp>

namespace qaic::rt {

class CompletionEngine {
 public:
  using Clock = std::chrono::steady_clock;
  using Wake = std::function<void()>;
  using NextDeadline = std::function<Clock::time_point()>;
  // The polling data path: spins a bounded time for a response before the thread sleeps; true
  // when there is one to drain (onWake follows at once).
  using Spin = std::function<bool()>;
  // The polling data path: how long the thread may sleep before it looks again (the device
  // raises no interrupt while it polls), or zero when the thread may sleep until a deadline.
  using PollPeriod = std::function<std::chrono::nanoseconds()>;

  // Throws Error(QS_ERROR) when io_uring cannot be set up. `eventFd` must stay open until stop();
  // the engine makes it non-blocking (an open file description flag, so the writer's too).
  CompletionEngine(int eventFd, Wake onWake, NextDeadline nextDeadline, Spin spin = {}, PollPeriod pollPeriod = {});
  ~CompletionEngine();
  CompletionEngine(const CompletionEngine&) = delete;
  CompletionEngine& operator=(const CompletionEngine&) = delete;

  void stop();

  // The longest sleep without a deadline, so a vanished device is noticed even when idle.
  static constexpr std::chrono::milliseconds kIdleWake{500};

 private:
  void run();

  int eventFd_;
  Wake onWake_;
  NextDeadline nextDeadline_;
  Spin spin_;
  PollPeriod pollPeriod_;
  std::atomic<bool> stopping_{false};
  struct Ring;
  std::unique_ptr<Ring> ring_;
  std::thread thread_;
};

}  // namespace qaic::rt
