// SPDX-License-Identifier: Apache-2.0
// A large collective is two steps of one barrier. After the first every part's buffers are
// known and each part works, until the second, on its own share of all of them, in place.
// all_reduce_sum: part p adds chunk p of every part's buffer in part order and writes the sum
// into chunk p of every part's buffer, its own included. Chunk p of any buffer is read and
// written by part p alone, so nothing goes through a buffer in between, and each part reads and
// writes its buffer's size once: the cost of one copy of it. all_gather: each part copies every
// part's slice into its own `all`. The second step keeps every buffer alive and unchanged until
// every part is done with it, and the next collective's first step cannot complete before every
// part has left the previous one.
//
// A small collective (stagedBytesPerPart()) is one step: each part copies its buffer into its
// own staging slot, arrives, then adds every slot in part order into its own buffer (or copies
// every slot into its `all`). No part reads another part's buffer, so none waits for the others
// to finish; the slots alternate by step parity, and a part writes the slot of step s + 2 only
// once every part has arrived at s + 1, that is, has finished reading the slots of step s.
//
// The barrier is one atomic word (the header says how), so a step costs one atomic add per part
// and a cache line passed between the cores; a waiting part spins up to kSpinTime on that
// word, where every part has a CPU of its own, then sleeps on a futex until its deadline. The
// mutex is for the slow path only: the reason of a broken rendezvous, a part failing while
// others are still in a data phase.
#include "kernels/PeerRendezvous.hpp"

#include <algorithm>
#include <cstring>

#include "base/Futex.hpp"
#include "kernels/format/DwhcTilesAvx512.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/format/VectorFormat.hpp"

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

constexpr std::size_t kSumLane = 64;  // floats per step of the fused sum: four 512-bit vectors

// Elements [begin, end) of every destination replaced by their sum over the sources, added in
// source order, in one pass: each step sums a few vectors' worth in registers and stores them
// into each destination, so the bytes are read once and written once per destination. The
// destinations may be the sources (in place). This pass is what an exchange between cards costs
// beyond its synchronization, so it is inlined into one function per instruction set, chosen
// once by the CPU (function attributes rather than target_clones, whose ifunc resolver runs
// before a sanitizer's runtime is up and crashes a ThreadSanitizer build at load).
using SumFloatsPass = void (*)(std::span<std::byte* const>, std::span<std::byte* const>, std::size_t, std::size_t);

[[gnu::always_inline]] inline void sumFloatsPass(std::span<std::byte* const> sources,
                                                 std::span<std::byte* const> destinations, std::size_t begin,
                                                 std::size_t end) {
  const auto at = [](std::byte* base, std::size_t i) { return reinterpret_cast<float*>(base) + i; };
  std::size_t i = begin;
  for (; i + kSumLane <= end; i += kSumLane) {
    float block[kSumLane];
    const float* first = at(sources[0], i);
    for (std::size_t j = 0; j < kSumLane; ++j) block[j] = first[j];
    for (std::size_t q = 1; q < sources.size(); ++q) {
      const float* next = at(sources[q], i);
      for (std::size_t j = 0; j < kSumLane; ++j) block[j] += next[j];
    }
    for (std::byte* to : destinations) {
      float* out = at(to, i);
      for (std::size_t j = 0; j < kSumLane; ++j) out[j] = block[j];
    }
  }
  for (; i < end; ++i) {
    float total = *at(sources[0], i);
    for (std::size_t q = 1; q < sources.size(); ++q) total += *at(sources[q], i);
    for (std::byte* to : destinations) *at(to, i) = total;
  }
}

[[gnu::target("avx512f")]] void sumFloatsAvx512(std::span<std::byte* const> sources,
                                                std::span<std::byte* const> destinations, std::size_t begin,
                                                std::size_t end) {
  sumFloatsPass(sources, destinations, begin, end);
}

[[gnu::target("avx2")]] void sumFloatsAvx2(std::span<std::byte* const> sources,
                                           std::span<std::byte* const> destinations, std::size_t begin,
                                           std::size_t end) {
  sumFloatsPass(sources, destinations, begin, end);
}

void sumFloatsBaseline(std::span<std::byte* const> sources, std::span<std::byte* const> destinations, std::size_t begin,
                       std::size_t end) {
  sumFloatsPass(sources, destinations, begin, end);
}

void sumFloats(std::span<std::byte* const> sources, std::span<std::byte* const> destinations, std::size_t begin,
               std::size_t end) {
  static const SumFloatsPass pass = format::cpuHasAvx512()     ? sumFloatsAvx512
                                    : format::cpuHasF16cAvx2() ? sumFloatsAvx2
                                                               : sumFloatsBaseline;
  pass(sources, destinations, begin, end);
}

// float16 accumulates in float over every source and rounds once.
void sumHalves(std::span<std::byte* const> sources, std::span<std::byte* const> destinations, std::size_t begin,
               std::size_t end, float* acc) {
  uint16_t rounded[kSumBlock];
  for (std::size_t start = begin; start < end; start += kSumBlock) {
    const std::size_t n = std::min(kSumBlock, end - start);
    const auto* first = reinterpret_cast<const uint16_t*>(sources[0]) + start;
    for (std::size_t i = 0; i < n; ++i) acc[i] = halfToFloat(first[i]);
    for (std::size_t q = 1; q < sources.size(); ++q)
      accumulate(acc, reinterpret_cast<const uint16_t*>(sources[q]) + start, n, halfToFloat);
    for (std::size_t i = 0; i < n; ++i) rounded[i] = floatToHalf(acc[i]);
    for (std::byte* to : destinations) std::memcpy(to + start * sizeof(uint16_t), rounded, n * sizeof(uint16_t));
  }
}

void sum(ir::DType type, std::span<std::byte* const> sources, std::span<std::byte* const> destinations,
         std::size_t begin, std::size_t end) {
  if (type == ir::DType::Float) {
    sumFloats(sources, destinations, begin, end);
  } else {
    float acc[kSumBlock];
    sumHalves(sources, destinations, begin, end, acc);
  }
}

// Long enough for a part on another core to arrive a little later (the parts' shares of a
// large sum end microseconds apart, and a futex wake-up costs tens of them on a KVM guest),
// short enough that a part that is not running costs little. Only where every part has a CPU.
constexpr auto kSpinTime = std::chrono::microseconds(20);

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the futex word is an atomic uint32_t");

uint32_t* futexWord(std::atomic<uint32_t>& word) { return reinterpret_cast<uint32_t*>(&word); }

const char* kindName(bool sum) { return sum ? "all_reduce_sum" : "all_gather"; }

// A part's staging slot: its share of the budget, in whole cache lines.
std::size_t stagingSlotBytesFor(std::size_t parts, bool spinning) {
  const std::size_t budget = spinning ? PeerRendezvous::kStagedBytesSpinning : PeerRendezvous::kStagedBytesSleeping;
  return parts < 2 ? 0 : budget / parts / 64 * 64;
}

}  // namespace

PeerRendezvous::PeerRendezvous(std::size_t parts, std::chrono::milliseconds timeout)
    : parts_(parts),
      timeout_(timeout),
      spinBeforeSleeping_(spinningCanHelp(parts)),
      stagingSlotBytes_(stagingSlotBytesFor(parts, spinBeforeSleeping_)),
      partStates_(parts),
      staging_(2 * parts * stagingSlotBytes_ / sizeof(CacheLine)) {
  if (parts == 0) throw ExecutionError("peer rendezvous: a program has at least one part");
  if (parts >= (uint64_t{1} << 32)) throw ExecutionError("peer rendezvous: " + std::to_string(parts) + " parts");
  for (PartState& state : partStates_) state.sources.resize(parts);
}

std::shared_ptr<PeerExchange> PeerRendezvous::exchange(std::size_t part) {
  if (part >= parts_) {
    throw ExecutionError("peer rendezvous: part " + std::to_string(part) + " of a program of " +
                         std::to_string(parts_) + " parts");
  }
  return std::make_shared<PartExchange>(shared_from_this(), part);
}

void PeerRendezvous::cancel(const std::string& reason) { breakWith(reason); }

bool PeerRendezvous::cancelled() const { return (state_.load() & kBroken) != 0; }

PeerRendezvous::Transfer PeerRendezvous::transferredBytes(std::size_t part) const {
  if (part >= parts_) return {};
  const PartState& state = partStates_[part];
  return {state.sent.load(std::memory_order_relaxed), state.received.load(std::memory_order_relaxed)};
}

std::byte* PeerRendezvous::stagingSlot(uint32_t step, std::size_t part) {
  return reinterpret_cast<std::byte*>(staging_.data()) + ((step & 1u) * parts_ + part) * stagingSlotBytes_;
}

void PeerRendezvous::wakeSleepers() {
  // Sequentially consistent with the sleepers' count and their check of the state: a part
  // either sees the change before it sleeps, or is counted here and woken.
  if (sleepers_.load() != 0) {
    wakeups_.fetch_add(1);
    futexWakeAll(futexWord(wakeups_), FutexScope::ThisProcess);
  }
}

void PeerRendezvous::breakWith(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!reason_) reason_ = reason;
    state_.fetch_or(kBroken);
  }
  wakeSleepers();
}

bool PeerRendezvous::breakForTimeout(uint32_t step) {
  std::lock_guard lock(mutex_);
  uint64_t state = state_.load();
  for (;;) {
    if (stepOf(state) != step || (state & kBroken) || countOf(state) == parts_) return false;
    std::string missing;
    for (std::size_t p = 0; p < parts_; ++p) {
      if (partStates_[p].arrivedAt.load(std::memory_order_relaxed) != step + 1)
        missing += (missing.empty() ? "" : ", ") + std::to_string(p);
    }
    if (missing.empty()) return false;  // every part is arriving: the step completes at once
    if (state_.compare_exchange_weak(state, state | kBroken)) {
      reason_ = "timed out after " + std::to_string(timeout_.count()) + " ms waiting for part(s) " + missing;
      break;
    }
  }
  // Outside the lock would do too; the sleepers' wake-up needs no order with it.
  wakeSleepers();
  return true;
}

void PeerRendezvous::leaveDataPhase() {
  // A failing part may be waiting for the data phases to end (only once the rendezvous broke).
  if (inDataPhase_.fetch_sub(1) == 1 && (state_.load() & kBroken)) {
    std::lock_guard lock(mutex_);
    dataPhasesEnded_.notify_all();
  }
}

void PeerRendezvous::fail(std::size_t part, int collective) {
  std::unique_lock lock(mutex_);
  dataPhasesEnded_.wait(lock, [this] { return inDataPhase_.load() == 0; });
  throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) + ": " +
                       reason_.value_or("broken"));
}

std::optional<std::string> PeerRendezvous::mismatch() const {
  // "all_reduce_sum 3 of 64 bytes of TL_FLOAT": what a slot says, as far as parts must agree.
  const auto describe = [](const Slot& s) {
    std::string text = std::string(kindName(s.kind == Kind::Sum)) + " " + std::to_string(s.collective) + " of " +
                       std::to_string(s.bytes) + " bytes";
    if (s.kind == Kind::Sum) text += " of " + std::string(ir::dtypeName(s.type));
    return text;
  };
  const Slot& first = partStates_[0].slot;
  for (std::size_t p = 1; p < parts_; ++p) {
    const Slot& s = partStates_[p].slot;
    if (s.collective != first.collective || s.kind != first.kind || s.bytes != first.bytes ||
        (s.kind == Kind::Sum && s.type != first.type)) {
      return "parts disagree on the collective: part 0 calls " + describe(first) + ", part " + std::to_string(p) + " " +
             describe(s);
    }
  }
  return std::nullopt;
}

uint32_t PeerRendezvous::arrive(std::size_t part, int collective, bool checkSlots, bool dataPhaseFollows) {
  // Before the step can complete (the count below): read only for the timeout's message.
  const uint32_t stepNow = stepOf(state_.load(std::memory_order_relaxed));
  partStates_[part].arrivedAt.store(stepNow + 1, std::memory_order_relaxed);
  // Release: this part's slot and staged bytes; acquire: every earlier part's.
  const uint64_t before = state_.fetch_add(1, std::memory_order_acq_rel);
  if (before & kBroken) fail(part, collective);
  const uint32_t step = stepOf(before);
  if (countOf(before) + 1 < parts_) {
    waitForStep(part, collective, step);
    return step;
  }
  if (checkSlots) {
    if (auto problem = mismatch()) {
      breakWith(*problem);
      fail(part, collective);
    }
  }
  // Marked before the others go on, so a part failing later waits for every one of them.
  if (dataPhaseFollows) inDataPhase_.store(parts_);
  uint64_t expected = before + 1;
  const uint64_t next = (static_cast<uint64_t>((step + 1) & 0x7fffffffu) << 32);
  if (!state_.compare_exchange_strong(expected, next)) {  // broken meanwhile: nobody goes on
    if (dataPhaseFollows) {
      inDataPhase_.store(0);
      std::lock_guard lock(mutex_);  // a part failing meanwhile may have seen the mark
      dataPhasesEnded_.notify_all();
    }
    fail(part, collective);
  }
  wakeSleepers();
  return step;
}

void PeerRendezvous::waitForStep(std::size_t part, int collective, uint32_t step) {
  // A completed step wins over a break that came after it: the other parts have gone on into
  // its data phase, and this one must too.
  const auto over = [&](uint64_t state) { return stepOf(state) != step || (state & kBroken); };
  if (spinBeforeSleeping_) {
    const auto until = std::chrono::steady_clock::now() + kSpinTime;
    for (unsigned spin = 1;; ++spin) {
      if (over(state_.load(std::memory_order_acquire))) break;
      spinPause();
      if (spin % 32 == 0 && std::chrono::steady_clock::now() >= until) break;
    }
  }
  uint64_t state = state_.load(std::memory_order_acquire);
  if (!over(state)) {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    sleepers_.fetch_add(1);
    for (;;) {
      const uint32_t wakeups = wakeups_.load();
      state = state_.load();
      if (over(state)) break;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        // Every part counted: the last one is completing the step; look again shortly.
        if (!breakForTimeout(step)) deadline = now + std::chrono::milliseconds(1);
        continue;
      }
      futexWaitWhile(futexWord(wakeups_), wakeups, deadline - now, FutexScope::ThisProcess);
    }
    sleepers_.fetch_sub(1);
  }
  if (stepOf(state) == step) fail(part, collective);  // broken while waiting
}

void PeerRendezvous::allReduceSum(std::size_t part, int collective, ir::DType type, std::span<std::byte> inOut) {
  if (type != ir::DType::Float && type != ir::DType::Float16) {
    throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) +
                         ": all_reduce_sum of " + std::string(ir::dtypeName(type)) + " (TL_FLOAT or TL_FLOAT16 only)");
  }
  PartState& mine = partStates_[part];
  mine.slot = Slot{collective, Kind::Sum, type, inOut.data(), nullptr, nullptr, inOut.size()};
  const std::size_t elementBytes = ir::dtypeSize(type);
  const std::size_t count = inOut.size() / elementBytes;
  const auto [begin, end] = chunkOf(count, part, parts_);
  std::span<std::byte*> sources(mine.sources);
  if (staged(inOut.size())) {
    const uint32_t step = stepOf(state_.load(std::memory_order_relaxed));
    if (!inOut.empty()) std::memcpy(stagingSlot(step, part), inOut.data(), inOut.size());
    arrive(part, collective, true, false);
    for (std::size_t q = 0; q < parts_; ++q) sources[q] = stagingSlot(step, q);
    std::byte* own = inOut.data();
    sum(type, sources, std::span<std::byte* const>(&own, 1), 0, count);
  } else {
    arrive(part, collective, true, true);
    for (std::size_t q = 0; q < parts_; ++q) sources[q] = partStates_[q].slot.inOut;
    sum(type, sources, sources, begin, end);
    leaveDataPhase();
    arrive(part, collective, false, false);
  }
  // Counted as a reduce-scatter then an all-gather: this part's chunk in from every other part
  // and its sum back out to them, the other chunks out and their sums back in.
  const uint64_t own = (end - begin) * elementBytes;
  const uint64_t moved = (parts_ - 1) * own + (inOut.size() - own);
  mine.sent.store(mine.sent.load(std::memory_order_relaxed) + moved, std::memory_order_relaxed);
  mine.received.store(mine.received.load(std::memory_order_relaxed) + moved, std::memory_order_relaxed);
}

void PeerRendezvous::allGather(std::size_t part, int collective, std::span<const std::byte> mine,
                               std::span<std::byte> all) {
  if (all.size() != mine.size() * parts_) {
    throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) +
                         ": all_gather into " + std::to_string(all.size()) + " bytes, not " + std::to_string(parts_) +
                         " x " + std::to_string(mine.size()));
  }
  PartState& own = partStates_[part];
  own.slot = Slot{collective, Kind::Gather, ir::DType::Float, nullptr, mine.data(), all.data(), mine.size()};
  if (staged(mine.size())) {
    const uint32_t step = stepOf(state_.load(std::memory_order_relaxed));
    if (!mine.empty()) std::memcpy(stagingSlot(step, part), mine.data(), mine.size());
    arrive(part, collective, true, false);
    for (std::size_t q = 0; q < parts_ && !mine.empty(); ++q)
      std::memcpy(all.data() + q * mine.size(), stagingSlot(step, q), mine.size());
  } else {
    arrive(part, collective, true, true);
    for (std::size_t q = 0; q < parts_ && !mine.empty(); ++q)
      std::memcpy(all.data() + q * mine.size(), partStates_[q].slot.mine, mine.size());
    leaveDataPhase();
    arrive(part, collective, false, false);
  }
  const uint64_t moved = (parts_ - 1) * mine.size();
  own.sent.store(own.sent.load(std::memory_order_relaxed) + moved, std::memory_order_relaxed);
  own.received.store(own.received.load(std::memory_order_relaxed) + moved, std::memory_order_relaxed);
}

}  // namespace qaic::kernels
