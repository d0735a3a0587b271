// SPDX-License-Identifier: Apache-2.0
// The futex calls and spin hints every waiter of the stack shares: the DBC window's words
// (driver/WindowFutex.hpp, shared between the host process and qaic-emu) and the rendezvous of a
// multi-device program's parts (kernels/PeerRendezvous, threads of one process).
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <ctime>

namespace qaic {

// Who may sleep on the word: threads of this process only (FUTEX_PRIVATE_FLAG, the cheaper hash),
// or threads of any process mapping it (a shared file's words).
enum class FutexScope : bool { ThisProcess, AcrossProcesses };

inline int futexOperation(int operation, FutexScope scope) {
  return scope == FutexScope::ThisProcess ? (operation | FUTEX_PRIVATE_FLAG) : operation;
}

// Wakes every thread sleeping on `word`.
inline void futexWakeAll(uint32_t* word, FutexScope scope) {
  ::syscall(SYS_futex, word, futexOperation(FUTEX_WAKE, scope), INT_MAX, nullptr, nullptr, 0);
}

// Sleeps while `word` still holds `seen`, at most `timeout`. A wake-up, a changed word, the
// timeout and a signal all just return: the caller re-checks what it waits for.
inline void futexWaitWhile(uint32_t* word, uint32_t seen, std::chrono::nanoseconds timeout, FutexScope scope) {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  const timespec wait{static_cast<time_t>(timeout.count() / 1'000'000'000),
                      static_cast<long>(timeout.count() % 1'000'000'000)};
  ::syscall(SYS_futex, word, futexOperation(FUTEX_WAIT, scope), seen, &wait, nullptr, 0);
}

// The CPUs this thread may run on (its affinity: taskset, a container's cpuset), read once.
inline std::size_t cpusOfThisThread() {
  static const std::size_t cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return std::size_t{2};  // unknown: assume spinning may pay
    return static_cast<std::size_t>(CPU_COUNT(&set));
  }();
  return cpus;
}

// Whether `threads` waiting for one another can all be running at once, so that a waiter's spin
// may see the others arrive; where they take turns on fewer CPUs, a spinner only delays the
// thread it waits for.
inline bool spinningCanHelp(std::size_t threads = 2) { return cpusOfThisThread() >= threads; }

// One turn of a busy wait: the CPU's pause hint, which frees the core's shared resources for its
// sibling thread and saves power.
inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace qaic
