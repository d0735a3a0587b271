// SPDX-License-Identifier: Apache-2.0
// The data path's futex calls on a DBC window's words (docs/device-protocol.md section 3): the
// doorbell's FUTEX_WAKE and a synchronous waiter's FUTEX_WAIT. They go through the calling
// thread's io_uring as IORING_OP_FUTEX_WAKE / IORING_OP_FUTEX_WAIT where the kernel has them
// (6.7 and later; probed once per process by running one of each), the plain futex system calls
// otherwise, so a wait with its timeout is one io_uring_enter. The words are shared futexes (no
// FUTEX2_PRIVATE): the waker and the sleeper are different processes mapping the same file.
//
// Each thread's ring belongs to that thread: made on its first call, closed when it exits. A
// thread that already waits on a ring of its own (the CompletionEngine's) lends it with
// ThreadRingLoan, so its wake-ups join that ring instead of opening a second one.
#pragma once

#include <liburing.h>

#include <chrono>
#include <cstdint>

namespace qaic::driver {

enum class FutexPath { IoUring, Syscalls };

// The path this process takes now: IoUring when the kernel has both operations and
// forceFutexSyscalls(true) was not called.
FutexPath futexPath();
// True when the probe found IORING_OP_FUTEX_WAIT and IORING_OP_FUTEX_WAKE working.
bool ioUringHasFutexOps();
// Tests and benchmarks: take the plain system calls even where io_uring has the operations.
void forceFutexSyscalls(bool force);

// Wakes every thread sleeping on `word`.
void futexWakeShared(uint32_t* word);
// Sleeps while `word` still holds `seen`, at most `timeout`. A wake-up, a changed word, the
// timeout and a signal all just return: the caller re-checks what it waits for.
void futexWaitShared(uint32_t* word, uint32_t seen, std::chrono::nanoseconds timeout);

// io_uring_enter calls the calling thread made for the two above (tests count them).
uint64_t futexRingEnters();

// Lends `ring` to the calling thread's futex calls while it lives (the ring stays its owner's).
// Its submissions carry IOSQE_CQE_SKIP_SUCCESS: a wake posts no completion to the owner's loop.
class ThreadRingLoan {
 public:
  explicit ThreadRingLoan(io_uring* ring);
  ~ThreadRingLoan();
  ThreadRingLoan(const ThreadRingLoan&) = delete;
  ThreadRingLoan& operator=(const ThreadRingLoan&) = delete;
};

}  // namespace qaic::driver
