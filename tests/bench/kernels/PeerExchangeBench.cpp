// SPDX-License-Identifier: Apache-2.0
// The transfer between the cards of a multi-device program, timed alone: kernels::PeerRendezvous
// all_reduce_sum with N parts on N threads (Google Benchmark's Threads(N): thread i is part i),
// float32 buffers of 16 KiB to 4 MiB per part, and a decode step's 64 sums of 16 KiB (one
// inference's transfer), against one memcpy of the bytes one part transfers per collective (what
// a card's p2p counters count: PeerRendezvous::Transfer::sent) and one of the bytes all parts
// transfer (what the inference's counter counts), timed in the same run. The decode step also
// with each tensor written by its part right before its sum, against the same tensors copied once
// from card to card. The MXINT8 wire too (-allow-mxint8-mdp-io): encode, the exchange of the
// encodings, decode and sum, as the all_reduce_sum kernel does it. Goal (issue 37): an
// inference's native transfer at most one memcpy of its transferred bytes. BareSync is the
// synchronization every collective pays whatever its size: the same rendezvous' all_reduce_sum
// of one float per part, so what an exchange costs beyond it is what its bytes cost.
// scripts/bench.sh prints the ratios.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "PageAlignedBuffer.hpp"
#include "kernels/PeerRendezvous.hpp"
#include "kernels/mx/Mxint8Format.hpp"

namespace {

using qaic::bench::PageAlignedBuffer;
using qaic::kernels::PeerRendezvous;
namespace mx = qaic::kernels::mx;

// One rendezvous per benchmark instance, shared by its threads (created by whichever comes first).
std::shared_ptr<PeerRendezvous> rendezvousFor(const benchmark::State& state, const char* kind) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int64_t, int64_t>, std::shared_ptr<PeerRendezvous>> rendezvous;
  std::lock_guard lock(mutex);
  auto& slot = rendezvous[{kind, state.range(0), state.threads()}];
  if (!slot)
    slot = std::make_shared<PeerRendezvous>(static_cast<std::size_t>(state.threads()), std::chrono::minutes(5));
  return slot;
}

// Per part and collective: the chunk sent to each other part and every other chunk back.
// Part `part`'s chunk of a tensor of `floats` floats (PeerRendezvous' split of a sum): its
// offset and size in bytes.
std::pair<std::size_t, std::size_t> chunkBytes(std::size_t floats, std::size_t parts, std::size_t part) {
  const std::size_t begin = floats * part / parts, end = floats * (part + 1) / parts;
  return {begin * sizeof(float), (end - begin) * sizeof(float)};
}

uint64_t nativeSentBytes(std::size_t floats, std::size_t parts, std::size_t part) {
  const uint64_t own = chunkBytes(floats, parts, part).second;
  return (parts - 1) * own + (floats * sizeof(float) - own);
}

void AllReduceSum(benchmark::State& state) {
  const auto floats = static_cast<std::size_t>(state.range(0));
  const auto parts = static_cast<std::size_t>(state.threads());
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto exchange = rendezvousFor(state, "native")->exchange(part);
  PageAlignedBuffer buffer(floats * sizeof(float));
  auto* values = reinterpret_cast<float*>(buffer.data());
  for (std::size_t i = 0; i < floats; ++i) values[i] = static_cast<float>(i % 97) * 1e-3f;
  for (auto _ : state) {
    exchange->allReduceSum(0, qaic::ir::DType::Float, buffer.span());
    benchmark::ClobberMemory();
  }
  if (part == 0) {
    uint64_t total = 0;
    for (std::size_t p = 0; p < parts; ++p) total += nativeSentBytes(floats, parts, p);
    state.counters["transfer_bytes"] = static_cast<double>(nativeSentBytes(floats, parts, 0));
    state.counters["all_parts_transfer_bytes"] = static_cast<double>(total);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * nativeSentBytes(floats, parts, 0)));
  }
}

// all_reduce_sum of one float per part: a small collective's single synchronization and
// next to no bytes.
void BareSync(benchmark::State& state) {
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto exchange = rendezvousFor(state, "sync")->exchange(part);
  float value = static_cast<float>(part);
  for (auto _ : state) {
    exchange->allReduceSum(0, qaic::ir::DType::Float, std::as_writable_bytes(std::span(&value, 1)));
    benchmark::DoNotOptimize(value);
  }
}

// The all_reduce_sum kernel's MXINT8 path: its own encoding out, every part's in, decoded and
// added in part order.
void Mxint8AllReduceSum(benchmark::State& state) {
  const auto floats = static_cast<std::size_t>(state.range(0));
  const auto parts = static_cast<std::size_t>(state.threads());
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto exchange = rendezvousFor(state, "mxint8")->exchange(part);
  const std::size_t encodedBytes = mx::mxint8EncodedBytes(floats);
  PageAlignedBuffer input(floats * sizeof(float)), sum(floats * sizeof(float)), mine(encodedBytes),
      all(encodedBytes * parts);
  // The sum lands in a buffer of its own: summed back into the input, the values would double
  // every iteration, and after a hundred or so every block would be an infinity, which encodes
  // without any arithmetic.
  auto* values = reinterpret_cast<float*>(input.data());
  auto* total = reinterpret_cast<float*>(sum.data());
  for (std::size_t i = 0; i < floats; ++i) values[i] = static_cast<float>(i % 97) * 1e-3f;
  for (auto _ : state) {
    mx::encodeMxint8(values, floats, mine.data());
    exchange->allGather(0, mine.span(), all.span());
    mx::decodeMxint8(all.data(), floats, 0, floats, total);
    for (std::size_t p = 1; p < parts; ++p)
      mx::accumulateMxint8(all.data() + p * encodedBytes, floats, 0, floats, total);
    benchmark::ClobberMemory();
  }
  if (part == 0) {
    state.counters["transfer_bytes"] = static_cast<double>((parts - 1) * encodedBytes);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (parts - 1) * encodedBytes));
  }
}

// One inference's exchanges, as a decoder split over the parts makes them at a decode step: a
// 32-layer model of hidden size 4096 sums its attention's and its MLP's row-split products,
// 4096 floats (16 KiB), twice per layer, each over a tensor of its own. Its transfer per
// inference is their total, which the goal compares with one memcpy of those bytes.
constexpr std::size_t kDecodeHidden = 4096, kDecodeCollectives = 64;

void DecodeStepExchanges(benchmark::State& state) {
  const auto parts = static_cast<std::size_t>(state.threads());
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto exchange = rendezvousFor(state, "decode")->exchange(part);
  const std::size_t tensorBytes = kDecodeHidden * sizeof(float);
  PageAlignedBuffer buffer(tensorBytes * kDecodeCollectives);
  auto* values = reinterpret_cast<float*>(buffer.data());
  for (std::size_t i = 0; i < kDecodeHidden * kDecodeCollectives; ++i) values[i] = static_cast<float>(i % 89) * 1e-3f;
  for (auto _ : state) {
    for (std::size_t c = 0; c < kDecodeCollectives; ++c)
      exchange->allReduceSum(static_cast<int>(c), qaic::ir::DType::Float,
                             buffer.span().subspan(c * tensorBytes, tensorBytes));
    benchmark::ClobberMemory();
  }
  if (part == 0) {
    uint64_t total = 0;
    for (std::size_t p = 0; p < parts; ++p) total += kDecodeCollectives * nativeSentBytes(kDecodeHidden, parts, p);
    state.counters["transfer_bytes"] = static_cast<double>(kDecodeCollectives *
                                                           nativeSentBytes(kDecodeHidden, parts, 0));
    state.counters["all_parts_transfer_bytes"] = static_cast<double>(total);
  }
}

// The same decode step as a card runs it: each tensor is written by its part (a kernel's output,
// here a fill) right before its sum, so the bytes a part receives sit in the other core's cache.
// The fills alone cost what DecodeStepProducedCopies' fills cost.
float fillValue(std::size_t part, std::size_t collective) {
  return static_cast<float>((part * kDecodeCollectives + collective) % 89) * 1e-3f;
}

void DecodeStepProducedExchanges(benchmark::State& state) {
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto exchange = rendezvousFor(state, "decode-produced")->exchange(part);
  const std::size_t tensorBytes = kDecodeHidden * sizeof(float);
  PageAlignedBuffer buffer(tensorBytes * kDecodeCollectives);
  for (auto _ : state) {
    for (std::size_t c = 0; c < kDecodeCollectives; ++c) {
      std::span<std::byte> tensor = buffer.span().subspan(c * tensorBytes, tensorBytes);
      std::fill_n(reinterpret_cast<float*>(tensor.data()), kDecodeHidden, fillValue(part, c));
      exchange->allReduceSum(static_cast<int>(c), qaic::ir::DType::Float, tensor);
    }
    benchmark::ClobberMemory();
  }
}

// The baseline of "one copy of the transferred bytes" between cards: the same tensors, produced
// the same way, and each part copies from the other parts' memory exactly the bytes an
// all_reduce_sum transfers to it (from each other part q: q's contribution to this part's chunk
// and q's chunk of the result; for 2 parts, the other's whole tensor), between the same two
// synchronizations a collective has (the other part may rewrite its tensor only after the copy).
// A P2P DMA moves the bytes that way, once, and no exchange can move fewer. Each tensor's bytes
// land in a place of their own, as in a receiving card's memory.
void DecodeStepProducedCopies(benchmark::State& state) {
  const auto parts = static_cast<std::size_t>(state.threads());
  const auto part = static_cast<std::size_t>(state.thread_index());
  auto rendezvous = rendezvousFor(state, "decode-copies");
  auto exchange = rendezvous->exchange(part);
  // Every part's tensors, by part count, for the others to copy from.
  static std::map<std::size_t, std::vector<std::byte*>> tensorsByParts;
  static std::mutex registryMutex;
  const std::size_t tensorBytes = kDecodeHidden * sizeof(float);
  PageAlignedBuffer buffer(tensorBytes * kDecodeCollectives), received(tensorBytes * kDecodeCollectives * parts);
  std::vector<std::byte*>* peers;
  {
    std::lock_guard lock(registryMutex);
    peers = &tensorsByParts[parts];
    peers->resize(parts);
    (*peers)[part] = buffer.data();
  }
  float token = 0;
  const auto synchronize = [&](int id) {
    exchange->allReduceSum(id, qaic::ir::DType::Float, std::as_writable_bytes(std::span(&token, 1)));
  };
  synchronize(-1);  // every part's buffer registered (the rendezvous orders the writes before)
  const auto [mineAt, mineBytes] = chunkBytes(kDecodeHidden, parts, part);
  uint64_t copied = 0;
  for (auto _ : state) {
    copied = 0;
    for (std::size_t c = 0; c < kDecodeCollectives; ++c) {
      std::fill_n(reinterpret_cast<float*>(buffer.data() + c * tensorBytes), kDecodeHidden, fillValue(part, c));
      synchronize(0);
      for (std::size_t q = 0; q < parts; ++q) {
        if (q == part) continue;
        const std::byte* from = (*peers)[q] + c * tensorBytes;
        std::byte* to = received.data() + (q * kDecodeCollectives + c) * tensorBytes;
        const auto [theirsAt, theirsBytes] = chunkBytes(kDecodeHidden, parts, q);
        std::memcpy(to + mineAt, from + mineAt, mineBytes);
        std::memcpy(to + theirsAt, from + theirsAt, theirsBytes);
        copied += mineBytes + theirsBytes;
      }
      synchronize(1);
    }
    benchmark::ClobberMemory();
  }
  if (part == 0) state.counters["copied_bytes"] = static_cast<double>(copied);
}

// The baseline: one memcpy of `bytes` between two page-aligned buffers.
void Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  PageAlignedBuffer from(bytes), to(bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.counters["transfer_bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

constexpr int64_t kFloats[] = {4 << 10, 64 << 10, 1 << 20};  // 16 KiB, 256 KiB, 4 MiB per part

// Each exchange, and memcpy of the bytes one part transfers and of the bytes all parts transfer
// (the parts move theirs at the same time, on their own cores).
void registerAll() {
  std::set<int64_t> copies;
  for (int parts : {2, 4}) {
    benchmark::RegisterBenchmark("BareSync", BareSync)->Arg(1)->Threads(parts)->UseRealTime();
    // Its argument, the collectives of one inference, also keys its rendezvous.
    benchmark::RegisterBenchmark("DecodeStepExchanges", DecodeStepExchanges)
        ->Arg(kDecodeCollectives)
        ->Threads(parts)
        ->UseRealTime();
    benchmark::RegisterBenchmark("DecodeStepProducedExchanges", DecodeStepProducedExchanges)
        ->Arg(kDecodeCollectives)
        ->Threads(parts)
        ->UseRealTime();
    benchmark::RegisterBenchmark("DecodeStepProducedCopies", DecodeStepProducedCopies)
        ->Arg(kDecodeCollectives)
        ->Threads(parts)
        ->UseRealTime();
    uint64_t decodeTotal = 0;
    for (int p = 0; p < parts; ++p)
      decodeTotal += kDecodeCollectives *
                     nativeSentBytes(kDecodeHidden, static_cast<std::size_t>(parts), static_cast<std::size_t>(p));
    copies.insert(
        static_cast<int64_t>(kDecodeCollectives * nativeSentBytes(kDecodeHidden, static_cast<std::size_t>(parts), 0)));
    copies.insert(static_cast<int64_t>(decodeTotal));
    for (int64_t floats : kFloats) {
      benchmark::RegisterBenchmark("AllReduceSum", AllReduceSum)->Arg(floats)->Threads(parts)->UseRealTime();
      benchmark::RegisterBenchmark("Mxint8AllReduceSum", Mxint8AllReduceSum)
          ->Arg(floats)
          ->Threads(parts)
          ->UseRealTime();
      uint64_t total = 0;
      for (int p = 0; p < parts; ++p) {
        total += nativeSentBytes(static_cast<std::size_t>(floats), static_cast<std::size_t>(parts),
                                 static_cast<std::size_t>(p));
      }
      copies.insert(
          static_cast<int64_t>(nativeSentBytes(static_cast<std::size_t>(floats), static_cast<std::size_t>(parts), 0)));
      copies.insert(static_cast<int64_t>(total));
    }
  }
  for (int64_t bytes : copies) benchmark::RegisterBenchmark("Memcpy", Memcpy)->Arg(bytes)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
