// SPDX-License-Identifier: Apache-2.0
// Each collective is two steps of one barrier. all_reduce_sum: at the first every part's buffer
// is known, then each part adds its own chunk of elements over all parts into the shared sum;
// at the second the sum is complete and each part copies it into its buffer. all_gather: after
// the first each part copies every part's slice, and the second keeps every slice alive until
// all have read it. Nothing is written into another part's memory, and the next collective's
// first step cannot complete before every part has left the previous one.
#include "kernels/PeerRendezvous.hpp"

#include <algorithm>
#include <cstring>

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

// sum[i] = slot 0's [i] + slot 1's [i] + ... in part order, for i in [begin, end).
void sumFloats(const std::vector<const float*>& inputs, float* sum, std::size_t begin, std::size_t end) {
  std::copy(inputs[0] + begin, inputs[0] + end, sum + begin);
  for (std::size_t q = 1; q < inputs.size(); ++q) {
    const float* in = inputs[q];
    for (std::size_t i = begin; i < end; ++i) sum[i] += in[i];
  }
}

// float16 accumulates in float over every part and rounds once, a block at a time.
void sumHalves(const std::vector<const uint16_t*>& inputs, uint16_t* sum, std::size_t begin, std::size_t end) {
  constexpr std::size_t kBlock = 256;
  float acc[kBlock];
  for (std::size_t start = begin; start < end; start += kBlock) {
    const std::size_t n = std::min(kBlock, end - start);
    for (std::size_t i = 0; i < n; ++i) acc[i] = halfToFloat(inputs[0][start + i]);
    for (std::size_t q = 1; q < inputs.size(); ++q) {
      for (std::size_t i = 0; i < n; ++i) acc[i] += halfToFloat(inputs[q][start + i]);
    }
    for (std::size_t i = 0; i < n; ++i) sum[start + i] = floatToHalf(acc[i]);
  }
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
  allArrived_.notify_all();
}

void PeerRendezvous::fail(std::size_t part, int collective) const {
  throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) + ": " + *broken_);
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
  if (broken_) fail(part, collective);
  present_[part] = true;
  if (++arrived_ == parts_) {
    if (checkSlots) {
      if (auto problem = mismatch()) {
        breakLocked(*problem);
        fail(part, collective);
      }
      if (slots_[0].kind == Kind::Sum && sum_.size() < slots_[0].bytes) sum_.resize(slots_[0].bytes);
    }
    arrived_ = 0;
    std::fill(present_.begin(), present_.end(), false);
    ++step_;
    allArrived_.notify_all();
    return;
  }
  const uint64_t step = step_;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (step_ == step && !broken_) {
    if (allArrived_.wait_until(lock, deadline) == std::cv_status::timeout && step_ == step && !broken_) {
      std::string missing;
      for (std::size_t p = 0; p < parts_; ++p) {
        if (!present_[p]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
      }
      breakLocked("timed out after " + std::to_string(timeout_.count()) + " ms waiting for part(s) " + missing);
    }
  }
  if (step_ == step) fail(part, collective);  // broken while waiting
}

void PeerRendezvous::allReduceSum(std::size_t part, int collective, ir::DType type, std::span<std::byte> inOut) {
  if (type != ir::DType::Float && type != ir::DType::Float16) {
    throw ExecutionError("part " + std::to_string(part) + ", collective " + std::to_string(collective) +
                         ": all_reduce_sum of " + std::string(ir::dtypeName(type)) + " (TL_FLOAT or TL_FLOAT16 only)");
  }
  std::unique_lock lock(mutex_);
  slots_[part] = Slot{collective, Kind::Sum, type, inOut.data(), nullptr, nullptr, inOut.size()};
  arrive(lock, part, collective, true);
  lock.unlock();
  const std::size_t elementBytes = ir::dtypeSize(type);
  const std::size_t count = inOut.size() / elementBytes;
  const auto [begin, end] = chunkOf(count, part, parts_);
  if (type == ir::DType::Float) {
    std::vector<const float*> inputs;
    for (const Slot& s : slots_) inputs.push_back(reinterpret_cast<const float*>(s.inOut));
    sumFloats(inputs, reinterpret_cast<float*>(sum_.data()), begin, end);
  } else {
    std::vector<const uint16_t*> inputs;
    for (const Slot& s : slots_) inputs.push_back(reinterpret_cast<const uint16_t*>(s.inOut));
    sumHalves(inputs, reinterpret_cast<uint16_t*>(sum_.data()), begin, end);
  }
  lock.lock();
  // Chunk in, every other part's chunk back; the same amount leaves for the other parts.
  const uint64_t own = (end - begin) * elementBytes;
  const uint64_t moved = (parts_ - 1) * own + (inOut.size() - own);
  transfers_[part].sent += moved;
  transfers_[part].received += moved;
  arrive(lock, part, collective, false);
  lock.unlock();
  if (!inOut.empty()) std::memcpy(inOut.data(), sum_.data(), inOut.size());
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
  lock.unlock();
  for (std::size_t q = 0; q < parts_; ++q) {
    if (mine.size()) std::memcpy(all.data() + q * mine.size(), slots_[q].mine, mine.size());
  }
  lock.lock();
  transfers_[part].sent += (parts_ - 1) * mine.size();
  transfers_[part].received += (parts_ - 1) * mine.size();
  arrive(lock, part, collective, false);
}

}  // namespace qaic::kernels
