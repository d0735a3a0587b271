// SPDX-License-Identifier: Apache-2.0
#include "ComputePool.hpp"

#include <sched.h>

#include <algorithm>

namespace qaic::emu {

unsigned hostCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

ComputePool::ComputePool(unsigned cores) : cores_(cores != 0 ? std::min(cores, hostCores()) : hostCores()) {}

unsigned ComputePool::threadsFor(uint32_t nsps) const { return std::clamp<unsigned>(nsps, 1, cores_); }

ComputePool::Lease::~Lease() {
  if (pool_ != nullptr && !suspended_) pool_->release(threads_);
}

void ComputePool::Lease::suspend() {
  if (pool_ == nullptr || suspended_) return;
  suspended_ = true;
  pool_->release(threads_);
}

bool ComputePool::Lease::resume(const std::atomic<bool>& cancelled) {
  if (pool_ == nullptr) return false;
  if (!suspended_) return true;
  Lease again = pool_->acquire(threads_, cancelled);
  if (!again) {
    pool_ = nullptr;  // nothing held: the destructor gives nothing back
    return false;
  }
  again.pool_ = nullptr;  // its threads are this lease's again
  suspended_ = false;
  return true;
}

ComputePool::Lease ComputePool::acquire(unsigned threads, const std::atomic<bool>& cancelled,
                                        std::chrono::milliseconds poll) {
  threads = std::clamp<unsigned>(threads, 1, cores_);
  std::unique_lock lock(mutex_);
  const uint64_t ticket = nextTicket_++;
  while (ticket != serving_ || busy_ + threads > cores_) {
    if (cancelled.load()) {
      abandoned_.insert(ticket);  // the callers behind this one are not held up by it
      advance();
      return {};
    }
    freed_.wait_for(lock, poll);
  }
  ++serving_;
  advance();
  busy_ += threads;
  busyMax_ = std::max(busyMax_, busy_);
  return Lease(this, threads);
}

// Caller holds mutex_. Turns given up by cancelled callers are passed over.
void ComputePool::advance() {
  for (auto it = abandoned_.begin(); it != abandoned_.end() && *it <= serving_;) {
    if (*it == serving_) ++serving_;
    it = abandoned_.erase(it);
  }
  freed_.notify_all();
}

void ComputePool::release(unsigned threads) {
  {
    std::lock_guard lock(mutex_);
    busy_ -= threads;
  }
  freed_.notify_all();
}

unsigned ComputePool::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

unsigned ComputePool::busyMax() const {
  std::lock_guard lock(mutex_);
  return busyMax_;
}

}  // namespace qaic::emu
