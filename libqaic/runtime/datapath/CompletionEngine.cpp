// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/CompletionEngine.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "driver/FutexRing.hpp"

namespace qaic::rt {

struct CompletionEngine::Ring {
  io_uring ring{};
  uint64_t counter = 0;  // the eventfd's value lands here
  __kernel_timespec timeout{};
};

CompletionEngine::CompletionEngine(int eventFd, Wake onWake, NextDeadline nextDeadline, Spin spin,
                                   PollPeriod pollPeriod)
    : eventFd_(eventFd),
      onWake_(std::move(onWake)),
      nextDeadline_(std::move(nextDeadline)),
      spin_(std::move(spin)),
      pollPeriod_(std::move(pollPeriod)),
      ring_(std::make_unique<Ring>()) {
  // The loop reads the eventfd after every poll completion to reset its counter. A completion
  // can outlive the count it reported (a multishot poll posts one per wake-up, and the read after
  // an earlier one already took the count), so that read must never block: a blocked thread
  // neither drains nor handles deadlines until the device happens to signal again.
  const int flags = ::fcntl(eventFd, F_GETFL);
  if (flags < 0 || ::fcntl(eventFd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw Error(QS_ERROR, std::string("fcntl on the completion eventfd: ") + std::strerror(errno));
  const int rc = io_uring_queue_init(8, &ring_->ring, 0);
  if (rc < 0) throw Error(QS_ERROR, std::string("io_uring_queue_init: ") + std::strerror(-rc));
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "qaic-complete");  // as top and perf show it
    run();
  });
}

CompletionEngine::~CompletionEngine() {
  stop();
  io_uring_queue_exit(&ring_->ring);
}

void CompletionEngine::stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  const uint64_t one = 1;
  // The read in flight completes on this write; the loop then sees stopping_.
  [[maybe_unused]] ssize_t written = ::write(eventFd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

namespace {

constexpr uint64_t kInterrupt = 1;  // user data of the eventfd poll

// One poll request that stays armed across interrupts (multishot), so a wake-up costs a single
// io_uring_enter: no read request and linked timeout to set up and tear down every time.
bool armInterruptPoll(io_uring* ring, int eventFd) {
  io_uring_sqe* poll = io_uring_get_sqe(ring);
  if (poll == nullptr) return false;
  io_uring_prep_poll_multishot(poll, eventFd, POLLIN);
  io_uring_sqe_set_data64(poll, kInterrupt);
  return io_uring_submit(ring) == 1;
}

}  // namespace

void CompletionEngine::run() {
  io_uring* ring = &ring_->ring;
  driver::ThreadRingLoan loan(ring);
  bool armed = armInterruptPoll(ring, eventFd_);
  while (!stopping_.load()) {
    if (spin_ && spin_()) {
      onWake_();
      continue;
    }
    const auto now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(nextDeadline_() - now);
    wait = std::clamp<std::chrono::nanoseconds>(wait, std::chrono::milliseconds(1), kIdleWake);
    if (pollPeriod_)
      if (const auto period = pollPeriod_(); period > std::chrono::nanoseconds::zero()) wait = std::min(wait, period);
    ring_->timeout.tv_sec = wait.count() / 1000000000;
    ring_->timeout.tv_nsec = wait.count() % 1000000000;

    // The deadline travels with the wait itself (IORING_ENTER_EXT_ARG): -ETIME when it passes.
    io_uring_cqe* cqe = nullptr;
    int rc = armed ? io_uring_wait_cqe_timeout(ring, &cqe, &ring_->timeout) : -EAGAIN;
    if (rc == 0) {
      unsigned head = 0, seen = 0;
      io_uring_for_each_cqe(ring, head, cqe) {
        // The kernel ends a multishot poll on an error or overflow; arm a new one.
        if (io_uring_cqe_get_data64(cqe) == kInterrupt && !(cqe->flags & IORING_CQE_F_MORE)) armed = false;
        ++seen;
      }
      io_uring_cq_advance(ring, seen);
      // Reset the counter (non-blocking: EAGAIN when an earlier read took it).
      [[maybe_unused]] ssize_t drained = ::read(eventFd_, &ring_->counter, sizeof ring_->counter);
    } else if (rc != -ETIME && rc != -EINTR) {
      // The ring itself failed: fall back to a bounded sleep so deadlines are still honoured.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!armed) armed = armInterruptPoll(ring, eventFd_);
    if (stopping_.load()) break;
    onWake_();
  }
}

}  // namespace qaic::rt
