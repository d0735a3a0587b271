#include "CompletionEngine.hpp"

#include <pthread.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qaic::rt::engine {

struct CompletionEngine::Ring {
  io_uring ring{};
  uint64_t counter = 0;        // the eventfd's value lands here
  __kernel_timespec timeout{};
};

CompletionEngine::CompletionEngine(int eventFd, Wake onWake, NextDeadline nextDeadline)
    : eventFd_(eventFd), onWake_(std::move(onWake)), nextDeadline_(std::move(nextDeadline)),
      ring_(std::make_unique<Ring>()) {
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

void CompletionEngine::run() {
  io_uring* ring = &ring_->ring;
  while (!stopping_.load()) {
    const auto now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(nextDeadline_() - now);
    wait = std::clamp<std::chrono::nanoseconds>(wait, std::chrono::milliseconds(1), kIdleWake);
    ring_->timeout.tv_sec = wait.count() / 1000000000;
    ring_->timeout.tv_nsec = wait.count() % 1000000000;

    io_uring_sqe* read = io_uring_get_sqe(ring);
    io_uring_prep_read(read, eventFd_, &ring_->counter, sizeof ring_->counter, 0);
    read->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(read, 1);
    io_uring_sqe* timeout = io_uring_get_sqe(ring);
    io_uring_prep_link_timeout(timeout, &ring_->timeout, 0);
    io_uring_sqe_set_data64(timeout, 2);

    int rc = io_uring_submit_and_wait(ring, 2);
    // Both the read and its linked timeout always post a completion; reap both before reuse.
    unsigned reaped = 0;
    while (reaped < 2) {
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_wait_cqe(ring, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) break;
      io_uring_cqe_seen(ring, cqe);
      ++reaped;
    }
    if (rc < 0 && rc != -EINTR) {
      // The ring itself failed: fall back to a bounded sleep so deadlines are still honoured.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (stopping_.load()) break;
    onWake_();
  }
}

}  // namespace qaic::rt::engine
