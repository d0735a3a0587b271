// SPDX-License-Identifier: Apache-2.0
// The MXFP6 decode GEMV (M = 1, K = 4096, N = 11008: a Llama-2-7B MLP projection) against moving
// the same weight bytes in the same run: memcpy of them, and a plain read of them (the floor a
// kernel that must read its weights once cannot beat). Bytes/s count the encoded weight bytes.
// One and two threads (columns split as the executor splits them). Goal (issue 38): the GEMV
// within 1.5x of the read's time. Figures: docs/notes/2026-11-29-mxfp6.md.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "PageAlignedBuffer.hpp"
#include "kernels/mx/Mxfp6Matmul.hpp"

namespace {

namespace mx = qaic::kernels::mx;

constexpr int64_t kDepth = 4096, kColumns = 11008;

// The encoded weight, built once (encoding 45 M values takes a few seconds).
const qaic::bench::PageAlignedBuffer& weights() {
  static const qaic::bench::PageAlignedBuffer encoded = [] {
    std::vector<float> w(static_cast<std::size_t>(kDepth * kColumns));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (auto& v : w) v = normal(rng);
    qaic::bench::PageAlignedBuffer out(mx::encodedBytes(kDepth, kColumns));
    mx::encodeMxfp6Columns(mx::ElementFormat::E2M3,
                           {std::as_bytes(std::span(w)), qaic::ir::DType::Float, kDepth, kColumns, false}, 0, kColumns,
                           out.span());
    return out;
  }();
  return encoded;
}

int threadsOf(const benchmark::State& state) { return static_cast<int>(state.range(0)); }

template <mx::MxPath kPath>
void BM_Mxfp6Gemv(benchmark::State& state) {
  if ((kPath == mx::MxPath::Avx512 && !mx::mxAvx512Available()) ||
      (kPath == mx::MxPath::Avx512Vbmi && !mx::mxAvx512VbmiAvailable()) ||
      (kPath == mx::MxPath::Avx2 && !mx::mxAvx2Available())) {
    state.SkipWithError("this CPU lacks the path");
    return;
  }
  const auto& w = weights();
  std::vector<float> x(kDepth), y(kColumns);
  for (int64_t i = 0; i < kDepth; ++i) x[i] = std::sin(float(i));
  const mx::Mxfp6Matrix matrix{mx::ElementFormat::E2M3, w.span(), kDepth, kColumns};
  for (auto _ : state) {
    mx::mxfp6Matmul(matrix, x.data(), 1, y.data(), 1.0f, threadsOf(state), kPath);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w.span().size()));
}

// memcpy of the weight bytes, split over the threads as the GEMV splits its columns.
void BM_WeightMemcpy(benchmark::State& state) {
  const auto& w = weights();
  const qaic::bench::PageAlignedBuffer copy(w.span().size());
  const int threads = threadsOf(state);
  const auto size = static_cast<int64_t>(w.span().size());
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = size * t / threads, end = size * (t + 1) / threads;
      std::memcpy(copy.data() + begin, w.data() + begin, static_cast<std::size_t>(end - begin));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size);
}

// Every 8-byte word of the weight read once and summed (four chains, so the adds never limit).
void BM_WeightRead(benchmark::State& state) {
  const auto& w = weights();
  const int threads = threadsOf(state);
  const auto words = static_cast<int64_t>(w.span().size() / 8);
  for (auto _ : state) {
    uint64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = words * t / threads, end = words * (t + 1) / threads;
      uint64_t s[4] = {0, 0, 0, 0};
      const auto* p = reinterpret_cast<const uint64_t*>(w.data());
      int64_t i = begin;
      for (; i + 4 <= end; i += 4) {
        s[0] += p[i];
        s[1] += p[i + 1];
        s[2] += p[i + 2];
        s[3] += p[i + 3];
      }
      for (; i < end; ++i) s[0] += p[i];
      total += s[0] + s[1] + s[2] + s[3];
    }
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * words * 8);
}

// The compiler's side: float32 weights [K, N] encoded, a range of 1024 columns at a time as a
// streaming writer would. Bytes/s count the float32 source bytes.
void BM_Mxfp6Encode(benchmark::State& state) {
  constexpr int64_t kChunk = 1024;
  std::vector<float> w(static_cast<std::size_t>(kDepth * kChunk));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto& v : w) v = normal(rng);
  std::vector<std::byte> out(mx::encodedBytes(kDepth, kChunk));
  const mx::WeightSource source{std::as_bytes(std::span(w)), qaic::ir::DType::Float, kDepth, kChunk, false};
  for (auto _ : state) {
    mx::encodeMxfp6Columns(mx::ElementFormat::E2M3, source, 0, kChunk, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w.size() * sizeof(float)));
}

void threadCounts(benchmark::internal::Benchmark* b) { b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime(); }

BENCHMARK(BM_WeightRead)->Apply(threadCounts);
BENCHMARK(BM_WeightMemcpy)->Apply(threadCounts);
BENCHMARK(BM_Mxfp6Gemv<mx::MxPath::Auto>)->Apply(threadCounts);
BENCHMARK(BM_Mxfp6Gemv<mx::MxPath::Avx512>)->Apply(threadCounts);
BENCHMARK(BM_Mxfp6Gemv<mx::MxPath::Avx512Vbmi>)->Apply(threadCounts);
BENCHMARK(BM_Mxfp6Gemv<mx::MxPath::Avx2>)->Apply(threadCounts);
BENCHMARK(BM_Mxfp6Encode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
