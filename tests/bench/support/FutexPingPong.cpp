// SPDX-License-Identifier: Apache-2.0
#include "FutexPingPong.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>

namespace qaic::bench {
namespace {

uint32_t load(uint32_t& word) { return std::atomic_ref<uint32_t>(word).load(std::memory_order_acquire); }
void store(uint32_t& word, uint32_t v) { std::atomic_ref<uint32_t>(word).store(v, std::memory_order_release); }

// Shared futexes (no FUTEX_PRIVATE_FLAG): the waiter is in the other process, as with the DBC
// doorbell.
void futexWait(uint32_t& word, uint32_t expected, const timespec& timeout) {
  syscall(SYS_futex, &word, FUTEX_WAIT, expected, &timeout, nullptr, 0);
}
void futexWake(uint32_t& word) { syscall(SYS_futex, &word, FUTEX_WAKE, 1, nullptr, nullptr, 0); }

// The responder: pong every new ping until told to stop or orphaned. Its waits time out every
// 100 ms so that it notices either.
[[noreturn]] void respond(uint32_t& ping, uint32_t& pong, uint32_t& stop, pid_t parent) {
  const timespec tick{0, 100'000'000};
  uint32_t seen = 0;
  while (load(stop) == 0 && getppid() == parent) {
    const uint32_t p = load(ping);
    if (p == seen) {
      futexWait(ping, seen, tick);
      continue;
    }
    seen = p;
    store(pong, p);
    futexWake(pong);
  }
  _exit(0);
}

}  // namespace

FutexPingPong::FutexPingPong() {
  void* page = mmap(nullptr, sizeof(Words), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return;
  words_ = new (page) Words{0, 0, 0};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) respond(words_->ping, words_->pong, words_->stop, parent);
  responder_ = pid;
}

FutexPingPong::~FutexPingPong() {
  if (responder_ > 0) {
    store(words_->stop, 1);
    store(words_->ping, load(words_->ping) + 1);
    futexWake(words_->ping);
    // The responder sees `stop` within one wait; a pidfd bounds our wait for its exit.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, responder_, 0));
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      poll(&p, 1, 1000);
      close(pidfd);
    }
    int status = 0;
    if (waitpid(responder_, &status, WNOHANG) != responder_) {
      kill(responder_, SIGKILL);
      waitpid(responder_, &status, 0);
    }
  }
  if (words_ != nullptr) munmap(words_, sizeof(Words));
}

bool FutexPingPong::roundTrip(std::chrono::milliseconds timeout) {
  const uint32_t n = ++sequence_;
  store(words_->ping, n);
  futexWake(words_->ping);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const uint32_t seen = load(words_->pong);
    if (seen == n) return true;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec wait{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    futexWait(words_->pong, seen, wait);
  }
}

}  // namespace qaic::bench
