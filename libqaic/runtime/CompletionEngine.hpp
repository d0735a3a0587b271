// The completion loop of one queue: a thread that waits through io_uring for the DBC's eventfd
// "interrupt" (a multishot IORING_OP_POLL_ADD, armed once) with a timeout set to the next
// data-path deadline (the wait's own timeout), then lets its owner drain every response and
// handle expired requests in one batch. No busy-spinning: between interrupts and deadlines the thread sleeps in the kernel.
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

  // Throws Error(QS_ERROR) when io_uring cannot be set up. `eventFd` must stay open until stop();
  // the engine makes it non-blocking (an open file description flag, so the writer's too).
  CompletionEngine(int eventFd, Wake onWake, NextDeadline nextDeadline);
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
  std::atomic<bool> stopping_{false};
  struct Ring;
  std::unique_ptr<Ring> ring_;
  std::thread thread_;
};

}  // namespace qaic::rt
