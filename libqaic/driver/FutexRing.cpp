// SPDX-License-Identifier: Apache-2.0
#include "driver/FutexRing.hpp"

#include <linux/futex.h>
#include <pthread.h>

#include <atomic>
#include <climits>
#include <cstring>

#include "driver/WindowFutex.hpp"

namespace qaic::driver {
namespace {

// liburing 2.3 (Debian 12) predates the futex operations: their opcodes follow
// IORING_OP_SENDMSG_ZC after IORING_OP_READ_MULTISHOT and IORING_OP_WAITID in the kernel's enum.
static_assert(IORING_OP_SENDMSG_ZC == 48, "io_uring opcode numbering");
constexpr uint8_t kOpFutexWait = 51;
constexpr uint8_t kOpFutexWake = 52;
constexpr uint32_t kFutex2SizeU32 = 0x02;         // FUTEX2_SIZE_U32; shared (no FUTEX2_PRIVATE)
constexpr uint64_t kFutexMatchAny = 0xffffffffu;  // FUTEX_BITSET_MATCH_ANY
constexpr uint64_t kWaitTag = 0x71616963'66757478ull;
constexpr uint64_t kCancelTag = kWaitTag + 1;

// The futex operation's SQE, as the kernel's io_futex_prep reads it: the word's address in addr,
// the value (to compare, or how many to wake) in off, the bitset in addr3, the futex2 flags in
// fd, and nothing else set.
void prepareFutex(io_uring_sqe* sqe, uint8_t opcode, uint32_t* word, uint64_t value) {
  std::memset(sqe, 0, sizeof *sqe);
  sqe->opcode = opcode;
  sqe->fd = static_cast<int32_t>(kFutex2SizeU32);
  sqe->addr = reinterpret_cast<uintptr_t>(word);
  sqe->off = value;
  sqe->addr3 = kFutexMatchAny;
}

// Runs one wake (nobody sleeps on the word) and one wait on a changed word through a scratch
// ring: the probe's opcode table alone would not catch a kernel that rejects this SQE layout.
bool probeFutexOps() {
  io_uring ring{};
  if (io_uring_queue_init(4, &ring, 0) < 0) return false;
  bool ok = false;
  if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
    ok = io_uring_opcode_supported(probe, kOpFutexWait) && io_uring_opcode_supported(probe, kOpFutexWake);
    io_uring_free_probe(probe);
  }
  uint32_t word = 1;
  for (uint8_t op : {kOpFutexWake, kOpFutexWait}) {
    if (!ok) break;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    prepareFutex(sqe, op, &word, op == kOpFutexWake ? INT_MAX : 0);  // the wait: word is not 0
    io_uring_cqe* cqe = nullptr;
    ok = io_uring_submit_and_wait(&ring, 1) == 1 && io_uring_peek_cqe(&ring, &cqe) == 0 &&
         cqe->res == (op == kOpFutexWake ? 0 : -EAGAIN);
    if (cqe != nullptr) io_uring_cqe_seen(&ring, cqe);
  }
  io_uring_queue_exit(&ring);
  return ok;
}

std::atomic<bool> forcedSyscalls{false};

// Bumped in the child of a fork: a ring made before it shares its queues with the parent, so
// the child's thread makes a new one (its copy of the old one is closed, the parent's stays).
std::atomic<unsigned> forkGeneration{0};

// The calling thread's own ring, made on first use and closed when the thread exits.
struct OwnRing {
  io_uring ring{};
  bool ready = false;
  unsigned generation = 0;
  void open() {
    generation = forkGeneration.load(std::memory_order_relaxed);
    ready = io_uring_queue_init(8, &ring, 0) == 0;
  }
  void close() {
    if (ready) io_uring_queue_exit(&ring);
    ready = false;
  }
  OwnRing() { open(); }
  ~OwnRing() { close(); }
};

thread_local io_uring* lentRing = nullptr;
thread_local uint64_t enters = 0;

io_uring* ownRing() {
  thread_local OwnRing own;
  if (own.generation != forkGeneration.load(std::memory_order_relaxed)) {
    own.close();
    own.open();
  }
  return own.ready ? &own.ring : nullptr;
}

}  // namespace

bool ioUringHasFutexOps() {
  static const bool supported = [] {
    ::pthread_atfork(nullptr, nullptr, [] { forkGeneration.fetch_add(1, std::memory_order_relaxed); });
    return probeFutexOps();
  }();
  return supported;
}

FutexPath futexPath() {
  return !forcedSyscalls.load(std::memory_order_relaxed) && ioUringHasFutexOps() ? FutexPath::IoUring
                                                                                 : FutexPath::Syscalls;
}

void forceFutexSyscalls(bool force) { forcedSyscalls.store(force); }

uint64_t futexRingEnters() { return enters; }

ThreadRingLoan::ThreadRingLoan(io_uring* ring) { lentRing = ring; }
ThreadRingLoan::~ThreadRingLoan() { lentRing = nullptr; }

void futexWakeShared(uint32_t* word) {
  io_uring* ring = futexPath() == FutexPath::IoUring ? (lentRing ? lentRing : ownRing()) : nullptr;
  io_uring_sqe* sqe = ring ? io_uring_get_sqe(ring) : nullptr;
  if (sqe == nullptr) {
    futexWakeAll(word);
    return;
  }
  prepareFutex(sqe, kOpFutexWake, word, INT_MAX);
  // The wake runs inside the submission; only a failure would post a completion, and the probe
  // ran one of these successfully.
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  ++enters;
  if (io_uring_submit(ring) != 1) futexWakeAll(word);
}

void futexWaitShared(uint32_t* word, uint32_t seen, std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  // A lent ring's completions are its owner's to reap: wait with the system call there.
  io_uring* ring = futexPath() == FutexPath::IoUring && lentRing == nullptr ? ownRing() : nullptr;
  io_uring_sqe* sqe = ring ? io_uring_get_sqe(ring) : nullptr;
  if (sqe == nullptr) {
    futexWaitWhile(word, seen, timeout);
    return;
  }
  prepareFutex(sqe, kOpFutexWait, word, seen);
  io_uring_sqe_set_data64(sqe, kWaitTag);
  __kernel_timespec limit{timeout.count() / 1'000'000'000, timeout.count() % 1'000'000'000};
  bool waitEnded = false;
  auto reap = [&] {
    unsigned head = 0, seenCount = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(ring, head, cqe) {
      if (cqe->user_data == kWaitTag) waitEnded = true;
      ++seenCount;
    }
    io_uring_cq_advance(ring, seenCount);
  };
  // Submission and the wait with its timeout in one io_uring_enter.
  io_uring_cqe* cqe = nullptr;
  ++enters;
  (void)io_uring_submit_and_wait_timeout(ring, &cqe, 1, &limit, nullptr);
  reap();
  if (waitEnded) return;
  // Timed out (or a signal): take the wait back before the word's memory may go away.
  if (io_uring_sqe* cancel = io_uring_get_sqe(ring)) {
    io_uring_prep_cancel64(cancel, kWaitTag, 0);
    io_uring_sqe_set_data64(cancel, kCancelTag);
    ++enters;
    io_uring_submit(ring);
  }
  while (!waitEnded) {
    ++enters;
    const int rc = io_uring_wait_cqe(ring, &cqe);
    if (rc < 0 && rc != -EINTR) break;  // the ring itself failed
    reap();
  }
}

}  // namespace qaic::driver
