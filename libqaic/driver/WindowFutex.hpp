// SPDX-License-Identifier: Apache-2.0
// The futex words of a DBC window (doorbell, response; docs/device-protocol.md section 3). They
// are shared futexes, without FUTEX_PRIVATE_FLAG: the thread that wakes and the thread that sleeps
// are in different processes mapping the same file. The device (qaic-emu) and the host
// (DbcWindow) both make these calls.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "base/Futex.hpp"

namespace qaic::driver {

// Wakes every thread sleeping on `word`.
inline void futexWakeAll(uint32_t* word) { qaic::futexWakeAll(word, FutexScope::AcrossProcesses); }

// Changes `word`, then wakes every thread sleeping on it. A thread that read the word before the
// change and has not gone to sleep yet finds it changed and does not sleep.
inline void futexBumpAndWakeAll(uint32_t* word) {
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(word);
}

// Sleeps while `word` still holds `seen`, at most `timeout` (qaic::futexWaitWhile).
inline void futexWaitWhile(uint32_t* word, uint32_t seen, std::chrono::nanoseconds timeout) {
  qaic::futexWaitWhile(word, seen, timeout, FutexScope::AcrossProcesses);
}

// Spinning that keeps failing is skipped (and never tried where this process may run on one CPU
// only, taskset: qaic::spinningCanHelp()): a spin that ran out makes the next waits sleep at once,
// and every kSpinRetry-th wait tries again with a short spin, a sixteenth of the full one, which
// restores full spins when it finds what it waits for (two threads placed on one CPU, or a peer
// slower than the spin, turn the spin into pure delay: a full 1 ms spin retried every 8th wait
// measured 260 us per tiny inference).
// Several threads may share one (the synchronous waiters of a queue): what one spin found
// decides for all of them, relaxed atomics, as a hint.
class AdaptiveSpin {
 public:
  // How long to spin now: `full`, a probe of full / 16, or zero.
  std::chrono::nanoseconds spinFor(std::chrono::nanoseconds full) {
    if (!spinningCanHelp()) return {};
    if (worked_.load(std::memory_order_relaxed)) return full;
    return (skipped_.fetch_add(1, std::memory_order_relaxed) + 1) % kSpinRetry == 0 ? full / 16
                                                                                    : std::chrono::nanoseconds::zero();
  }
  void result(bool found) { worked_.store(found, std::memory_order_relaxed); }

 private:
  static constexpr unsigned kSpinRetry = 8;
  std::atomic<bool> worked_{true};
  std::atomic<unsigned> skipped_{0};
};

// The first turns of a spin pause the CPU; the later ones yield it (spinTurn).
inline constexpr unsigned kPauseTurns = 64;

// Whether a bounded spin at `turn` has run past `until`. While the turns pause, the clock is read
// every 16th turn only: a read costs about as much as the turns between two reads, and spinners
// that read it every turn spent a quarter of their CPU time in clock_gettime (perf,
// Throughput/threads:4). A yield may give the CPU away for a whole time slice: after each.
inline bool spinExpired(unsigned turn, std::chrono::steady_clock::time_point until) {
  return (turn >= kPauseTurns || turn % 16 == 0) && std::chrono::steady_clock::now() >= until;
}

// One turn of a bounded spin on a window's registers (both sides of the polling data path spin
// before they sleep): the CPU's pause hint for the first turns, then sched_yield, so that on a
// machine with more runnable threads than CPUs the spinner hands its CPU to the thread it waits
// for instead of burning its time slice (on an idle CPU the yield returns at once).
inline void spinTurn(unsigned turn) {
  if (turn < kPauseTurns) {
    spinPause();
    return;
  }
  ::sched_yield();
}

}  // namespace qaic::driver
