// SPDX-License-Identifier: Apache-2.0
// The host cores the emulated NSPs compute on, shared by every activation of an emulator. A
// program run holds as many of them as the threads its kernels were built for (its NSPs,
// capped by the pool), so concurrent activations never compute on more threads than the pool
// has: they wait their turn, first come first served, the way programs queue for a card's NSPs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>

namespace qaic::emu {

// The CPUs this process may run on (its affinity mask), at least 1.
unsigned hostCores();

class ComputePool {
 public:
  // `cores` 0: hostCores(); never more than that.
  explicit ComputePool(unsigned cores = 0);
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  unsigned cores() const { return cores_; }
  // The threads a program for `nsps` NSPs computes with: one per NSP, at most cores().
  unsigned threadsFor(uint32_t nsps) const;

  // Threads held for one run; given back when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept : pool_(other.pool_), threads_(other.threads_), suspended_(other.suspended_) {
      other.pool_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    explicit operator bool() const { return pool_ != nullptr; }
    unsigned threads() const { return threads_; }
    // While the run waits for something other than compute (a multi-device program's
    // collective waiting for the other parts), its threads go back to the pool; resume() waits
    // for as many again, in turn, and is false (the lease then empty) when `cancelled` ended the
    // wait. Both only on the thread that holds the lease.
    void suspend();
    bool resume(const std::atomic<bool>& cancelled);

   private:
    friend class ComputePool;
    Lease(ComputePool* pool, unsigned threads) : pool_(pool), threads_(threads) {}
    ComputePool* pool_ = nullptr;
    unsigned threads_ = 0;
    bool suspended_ = false;
  };

  // Waits until `threads` (clamped to [1, cores()]) are free and no earlier caller still waits,
  // then holds them. Every holder is a program run, which ends, so the wait ends too; `cancelled`
  // (polled every `poll`) ends it early with an empty lease (an activation being stopped).
  Lease acquire(unsigned threads, const std::atomic<bool>& cancelled,
                std::chrono::milliseconds poll = std::chrono::milliseconds(100));

  // Threads computing now, and the most that ever computed at once (what a test checks against
  // cores()).
  unsigned busy() const;
  unsigned busyMax() const;

 private:
  void release(unsigned threads);
  void advance();

  const unsigned cores_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  unsigned busy_ = 0;
  unsigned busyMax_ = 0;
  uint64_t nextTicket_ = 0;  // first come, first served: a wide run is not starved by narrow ones
  uint64_t serving_ = 0;
  std::set<uint64_t> abandoned_;  // tickets of cancelled callers not yet reached
};

}  // namespace qaic::emu
