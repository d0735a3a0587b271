// SPDX-License-Identifier: Apache-2.0
// Each collective is two steps of one barrier. After the first every part's buffers are known
// and each part works, until the second, on its own share of all of them, in place.
// all_reduce_sum: part p adds chunk p of every part's buffer in part order and writes the sum
// into chunk p of every part's buffer, its own included. Chunk p of any buffer is read and
// written by part p alone, so nothing goes through a buffer in between, and each part reads and
// writes its buffer's size once: the cost of one copy of it. all_gather: each part copies every
// part's slice into its own `all`. The second step keeps every buffer alive and unchanged until
// every part is done with it, and the next collective's first step cannot complete before every
// part has left the previous one.
#include "kernels/PeerRendezvous.hpp"

#include <algorithm>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kernels/format/Half.hpp"

namespace qaic::kernels {

class PeerRendezvous::PartExchange final : public PeerExchange {
 public:
  PartExchange(std::shared_ptr<PeerRendezvous> rendezvous, std::size_t part)
      : rendezvous_(std::move(rendezvous)), part_(part) {}
  std::size_t parts() const override { return rendezvous_->parts_; }
  std::size_t part() const override { return part_; }
  void allReduceSum(int collective, ir::DType type, std::span<std::byte> inOut) override {
    rendezvous_->allReduceSum(part_, collective, type, inOut);
  }
  void allGather(int collective, std::span<const std::byte> mine, std::span<std::byte> all) override {
    rendezvous_->allGather(part_, collective, mine, all);
  }

 private:
  std::shared_ptr<PeerRendezvous> rendezvous_;
  std::size_t part_;
};

namespace {

// Part `part`'s share [begin, end) of `count` elements.
std::pair<std::size_t, std::size_t> chunkOf(std::size_t count, std::size_t part, std::size_t parts) {
  return {count * part / parts, count * (part + 1) / parts};
}

constexpr std::size_t kSumBlock = 1024;  // elements summed at a time, in a buffer in L1

// acc[0, n) += in[0, n). A full block is a loop of constant length, which -O2 vectorizes (its
// cost model takes only loops without a scalar remainder); the last block may be short.
template <typename Element, typename ToFloat>
void accumulate(float* acc, const Element* in, std::size_t n, ToFloat toFloat) {
  if (n == kSumBlock) {
    for (std::size_t i = 0; i < kSumBlock; ++i) acc[i] += toFloat(in[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) acc[i] += toFloat(in[i]);
  }
}

// Elements [begin, end) of every buffer replaced by their sum over the buffers, added in
// buffer order: `acc` (kSumBlock floats) gathers a block, which is then stored into each.
void sumFloatsInPlace(const std::vector<std::byte*>& buffers, std::size_t begin, std::size_t end, float* acc) {
  for (std::size_t start = begin; start < end; start += kSumBlock) {
    const std::size_t n = std::min(kSumBlock, end - start);
    std::memcpy(acc, buffers[0] + start * sizeof(float), n * sizeof(float));
    for (std::size_t q = 1; q < buffers.size(); ++q)
      accumulate(acc, reinterpret_cast<const float*>(buffers[q]) + start, n, [](float v) { return v; });
    for (std::byte* buffer : buffers) std::memcpy(buffer + start * sizeof(float), acc, n * sizeof(float));
  }
}

// float16 accumulates in float over every buffer and rounds once.
void sumHalvesInPlace(const std::vector<std::byte*>& buffers, std::size_t begin, std::size_t end, float* acc) {
  uint16_t rounded[kSumBlock];
  for (std::size_t start = begin; start < end; start += kSumBlock) {
    const std::size_t n = std::min(kSumBlock, end - start);
    const auto* first = reinterpret_cast<const uint16_t*>(buffers[0]) + start;
    for (std::size_t i = 0; i < n; ++i) acc[i] = halfToFloat(first[i]);
    for (std::size_t q = 1; q < buffers.size(); ++q)
      accumulate(acc, reinterpret_cast<const uint16_t*>(buffers[q]) + start, n, halfToFloat);
    for (std::size_t i = 0; i < n; ++i) rounded[i] = floatToHalf(acc[i]);
    for (std::byte* buffer : buffers) std::memcpy(buffer + start * sizeof(uint16_t), rounded, n * sizeof(uint16_t));
  }
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

const char* kindName(bool sum) { return sum ? "all_reduce_sum" : "all_gather"; }

}  // namespace

PeerRendezvous::PeerRendezvous(std::size_t parts, std::chrono::milliseconds timeout)
    : parts_(parts), timeout_(timeout), slots_(parts), present_(parts, false), transfers_(parts) {
  if (parts == 0) throw ExecutionError("peer rendezvous: a program has at least one part");
}

std::shared_ptr<PeerExchange> PeerRendezvous::exchange(std::size_t part) {
  if (part >= parts_) {
    throw ExecutionError("peer rendezvous: part " + std::to_string(part) + " of a program of " +
                         std::to_string(parts_) + " parts");
  }
  return std::make_shared<PartExchange>(shared_from_this(), part);
}

void PeerRendezvous::cancel(const std::string& reason) {
  std::lock_guard lock(mutex_);
  breakLocked(reason);
}

bool PeerRendezvous::cancelled() const {
  std::lock_guard lock(mutex_);
  return broken_.has_value();
}

PeerRendezvous::Transfer PeerRendezvous::transferredBytes(std::size_t part) const {
  std::lock_guard lock(mutex_);
  return part < parts_ ? transfers_[part] : Transfer{};
}

void PeerRendezvous::breakLocked(const std::string& reason) {
  if (!broken_) broken_ = reason;
  brokenFlag_.store(true, std::memory_order_relaxed);
  allArrived_.notify_all();
}

void PeerRendezvous::fail(std::unique_lock<std::mutex>& lock, std::size_t part, int collective) {
  dataPhasesEnded_.wait(lock, [this] { return inDataPhase_ == 0; });
  throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) + ": " + *broken_);
}

bool PeerRendezvous::spinForStep(std::unique_lock<std::mutex>& lock, uint64_t step) {
  // Long enough for a peer on another core to finish a step's bookkeeping, short enough that a
  // peer that is not running costs little; the clock is read every 64 pauses.
  constexpr auto kSpinTime = std::chrono::microseconds(20);
  lock.unlock();
  const auto until = std::chrono::steady_clock::now() + kSpinTime;
  bool done = false;
  for (unsigned spin = 1; !done; ++spin) {
    cpuRelax();
    done = step_.load(std::memory_order_acquire) != step || brokenFlag_.load(std::memory_order_relaxed);
    if (spin % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
  }
  lock.lock();
  return done;
}

std::optional<std::string> PeerRendezvous::mismatch() const {
  const Slot& first = slots_[0];
  for (std::size_t p = 1; p < parts_; ++p) {
    const Slot& s = slots_[p];
    if (s.collective != first.collective || s.kind != first.kind || s.bytes != first.bytes ||
        (s.kind == Kind::Sum && s.type != first.type)) {
      return "parts disagree on the collective: part 0 calls " + std::string(kindName(first.kind == Kind::Sum)) + " " +
             std::to_string(first.collective) + " of " + std::to_string(first.bytes) + " bytes, part " +
             std::to_string(p) + " " + kindName(s.kind == Kind::Sum) + " " + std::to_string(s.collective) + " of " +
             std::to_string(s.bytes) + " bytes";
    }
  }
  return std::nullopt;
}

void PeerRendezvous::arrive(std::unique_lock<std::mutex>& lock, std::size_t part, int collective, bool checkSlots) {
  if (broken_) fail(lock, part, collective);
  present_[part] = true;
  if (++arrived_ == parts_) {
    if (checkSlots) {
      if (auto problem = mismatch()) {
        breakLocked(*problem);
        fail(lock, part, collective);
      }
    }
    arrived_ = 0;
    std::fill(present_.begin(), present_.end(), false);
    step_.fetch_add(1, std::memory_order_release);
    allArrived_.notify_all();
    return;
  }
  const uint64_t step = step_.load(std::memory_order_relaxed);
  spinForStep(lock, step);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (step_.load(std::memory_order_relaxed) == step && !broken_) {
    if (allArrived_.wait_until(lock, deadline) == std::cv_status::timeout &&
        step_.load(std::memory_order_relaxed) == step && !broken_) {
      std::string missing;
      for (std::size_t p = 0; p < parts_; ++p) {
        if (!present_[p]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
      }
      breakLocked("timed out after " + std::to_string(timeout_.count()) + " ms waiting for part(s) " + missing);
    }
  }
  if (step_.load(std::memory_order_relaxed) == step) fail(lock, part, collective);  // broken while waiting
}

void PeerRendezvous::allReduceSum(std::size_t part, int collective, ir::DType type, std::span<std::byte> inOut) {
  if (type != ir::DType::Float && type != ir::DType::Float16) {
    throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) +
                         ": all_reduce_sum of " + std::string(ir::dtypeName(type)) + " (TL_FLOAT or TL_FLOAT16 only)");
  }
  std::unique_lock lock(mutex_);
  slots_[part] = Slot{collective, Kind::Sum, type, inOut.data(), nullptr, nullptr, inOut.size()};
  arrive(lock, part, collective, true);
  ++inDataPhase_;
  std::vector<std::byte*> buffers;
  for (const Slot& s : slots_) buffers.push_back(s.inOut);
  lock.unlock();
  const std::size_t elementBytes = ir::dtypeSize(type);
  const std::size_t count = inOut.size() / elementBytes;
  const auto [begin, end] = chunkOf(count, part, parts_);
  float acc[kSumBlock];
  if (type == ir::DType::Float)
    sumFloatsInPlace(buffers, begin, end, acc);
  else
    sumHalvesInPlace(buffers, begin, end, acc);
  lock.lock();
  if (--inDataPhase_ == 0) dataPhasesEnded_.notify_all();
  // Counted as a reduce-scatter then an all-gather: this part's chunk in from every other part
  // and its sum back out to them, the other chunks out and their sums back in.
  const uint64_t own = (end - begin) * elementBytes;
  const uint64_t moved = (parts_ - 1) * own + (inOut.size() - own);
  transfers_[part].sent += moved;
  transfers_[part].received += moved;
  arrive(lock, part, collective, false);
}

void PeerRendezvous::allGather(std::size_t part, int collective, std::span<const std::byte> mine,
                               std::span<std::byte> all) {
  if (all.size() != mine.size() * parts_) {
    throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) +
                         ": all_gather into " + std::to_string(all.size()) + " bytes, not " + std::to_string(parts_) +
                         " x " + std::to_string(mine.size()));
  }
  std::unique_lock lock(mutex_);
  slots_[part] = Slot{collective, Kind::Gather, ir::DType::Float, nullptr, mine.data(), all.data(), mine.size()};
  arrive(lock, part, collective, true);
  ++inDataPhase_;
  std::vector<const std::byte*> slices;
  for (const Slot& s : slots_) slices.push_back(s.mine);
  lock.unlock();
  for (std::size_t q = 0; q < parts_; ++q) {
    if (mine.size()) std::memcpy(all.data() + q * mine.size(), slices[q], mine.size());
  }
  lock.lock();
  if (--inDataPhase_ == 0) dataPhasesEnded_.notify_all();
  transfers_[part].sent += (parts_ - 1) * mine.size();
  transfers_[part].received += (parts_ - 1) * mine.size();
  arrive(lock, part, collective, false);
}

}  // namespace qaic::kernels
