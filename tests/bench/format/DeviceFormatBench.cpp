// SPDX-License-Identifier: Apache-2.0
// Device-format conversion throughput against memcpy of the same user bytes, measured in the
// same run (scripts/bench-kernels.sh prints the ratios). Bytes processed = the user buffer's.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "DeviceFormatShapes.hpp"
#include "PageAlignedBuffer.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace {

using qaic::bench::deviceFormatShapes;
using qaic::ir::DeviceLayout;
using qaic::ir::DType;
using qaic::ir::UserLayout;
using qaic::kernels::ConversionPath;

std::vector<float> randomImage(int64_t count) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = dist(rng);
  return v;
}

qaic::ir::Dims dimsOf(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3)};
}

int64_t countOf(const qaic::ir::Dims& d) { return d[0] * d[1] * d[2] * d[3]; }

// The user side, page-aligned as well: qaic-runner's output buffers start on a cache line
// (CacheLineAllocator), and a std::vector's placement (16 bytes past a line when malloc maps it,
// anywhere on its heap) would decide which postprocess kernel runs and how fast memcpy writes.
// BM_PostprocessOffset and BM_MemcpyOffset measure other placements.
qaic::bench::PageAlignedBuffer userImage(int64_t count) {
  const auto values = randomImage(count);
  qaic::bench::PageAlignedBuffer buffer(values.size() * sizeof(float));
  std::memcpy(buffer.data(), values.data(), values.size() * sizeof(float));
  return buffer;
}

// memcpy of the image into a destination `offset` bytes past a page.
void timeMemcpy(benchmark::State& state, const qaic::ir::Dims& dims, std::size_t offset) {
  const auto src = userImage(countOf(dims));
  const qaic::bench::PageAlignedBuffer dstStore(src.span().size() + offset);
  const std::span<std::byte> dst = dstStore.span().subspan(offset, src.span().size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), dst.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(dst.size()));
}

void BM_Memcpy(benchmark::State& state) { timeMemcpy(state, dimsOf(state), 0); }

template <DeviceLayout kLayout, DType kElement, ConversionPath kPath>
void BM_Preprocess(benchmark::State& state) {
  const auto dims = dimsOf(state);
  const auto src = userImage(countOf(dims));
  const qaic::ir::DeviceFormat format{kLayout, kElement};
  const qaic::bench::PageAlignedBuffer device(qaic::kernels::deviceBufferBytes(dims, format));
  const auto dst = device.span();
  const qaic::kernels::UserBufferView view{"bench", DType::Float, UserLayout::NCHW, dims};
  for (auto _ : state) {
    qaic::kernels::userToDevice(view, src.span(), format, dst, kPath);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(src.span().size()));
}

template <DeviceLayout kLayout, DType kElement, ConversionPath kPath>
void BM_Postprocess(benchmark::State& state) {
  const auto dims = dimsOf(state);
  const qaic::ir::DeviceFormat format{kLayout, kElement};
  const qaic::bench::PageAlignedBuffer device(qaic::kernels::deviceBufferBytes(dims, format));
  const auto src = device.span();
  const qaic::bench::PageAlignedBuffer dst(static_cast<std::size_t>(countOf(dims)) * sizeof(float));
  const qaic::kernels::UserBufferView view{"bench", DType::Float, UserLayout::NCHW, dims};
  const auto image = userImage(countOf(dims));
  qaic::kernels::userToDevice(view, image.span(), format, src);
  for (auto _ : state) {
    qaic::kernels::deviceToUser(format, src, view, dst.span(), kPath);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(dst.span().size()));
}

BENCHMARK(BM_Memcpy)->Apply(deviceFormatShapes);
BENCHMARK(BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Auto>)->Apply(deviceFormatShapes);
BENCHMARK(BM_Preprocess<DeviceLayout::DHWC, DType::Float16, ConversionPath::Auto>)->Apply(deviceFormatShapes);
BENCHMARK(BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Scalar>)->Apply(deviceFormatShapes);
BENCHMARK(BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Auto>)->Apply(deviceFormatShapes);
BENCHMARK(BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Scalar>)->Apply(deviceFormatShapes);
// Reference rows: each vector kernel family forced, an A/B of Auto's choice in the same run.
// Registered only on a CPU that has the family (forcing it elsewhere throws).
const bool kForcedRows = [] {
  if (!qaic::kernels::vectorPathAvailable()) return false;
  benchmark::RegisterBenchmark("BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Avx2>",
                               BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Avx2>)
      ->Apply(deviceFormatShapes);
  benchmark::RegisterBenchmark("BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Avx2>",
                               BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Avx2>)
      ->Apply(deviceFormatShapes);
  if (!qaic::kernels::avx512PathAvailable()) return true;
  benchmark::RegisterBenchmark("BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Avx512>",
                               BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Avx512>)
      ->Apply(deviceFormatShapes);
  benchmark::RegisterBenchmark("BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Avx512>",
                               BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Avx512>)
      ->Apply(deviceFormatShapes);
  return true;
}();

// Investigation rows, off by default (scripts/bench-kernels.sh does not show them): the DWHC
// rows at 56 x 56 for chunk widths around 1/20/56/56's chunks of 8, 8 and 4 channels. Run with
// BENCH_CHUNK_WIDTHS=1 and --benchmark_filter=ChunkWidth.
void chunkWidths(benchmark::internal::Benchmark* b) {
  for (const int64_t c : {2, 4, 8, 16, 20, 24}) b->Args({1, c, 56, 56});
}

// Postprocess into a user buffer whose data starts `range(4)` bytes past a page (so past a
// 64-byte boundary), the device buffer page-aligned as in every other row.
void BM_PostprocessOffset(benchmark::State& state) {
  const auto dims = dimsOf(state);
  const auto offset = static_cast<std::size_t>(state.range(4));
  const qaic::ir::DeviceFormat format{DeviceLayout::DWHC, DType::Float};
  const std::size_t userBytes = static_cast<std::size_t>(countOf(dims)) * sizeof(float);
  const qaic::bench::PageAlignedBuffer deviceStore(qaic::kernels::deviceBufferBytes(dims, format));
  const qaic::bench::PageAlignedBuffer userStore(userBytes + offset);
  const std::span<std::byte> device = deviceStore.span();
  const std::span<std::byte> user = userStore.span().subspan(offset, userBytes);
  const qaic::kernels::UserBufferView view{"bench", DType::Float, UserLayout::NCHW, dims};
  const auto image = userImage(countOf(dims));
  qaic::kernels::userToDevice(view, image.span(), format, device);
  for (auto _ : state) {
    qaic::kernels::deviceToUser(format, device, view, user, ConversionPath::Auto);
    benchmark::DoNotOptimize(user.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(userBytes));
}

// memcpy into a destination `range(4)` bytes past a page: the baseline of BM_PostprocessOffset
// at the same placement.
void BM_MemcpyOffset(benchmark::State& state) {
  timeMemcpy(state, dimsOf(state), static_cast<std::size_t>(state.range(4)));
}

const bool kChunkWidthRows = [] {
  if (std::getenv("BENCH_CHUNK_WIDTHS") == nullptr) return false;
  benchmark::RegisterBenchmark("ChunkWidth/BM_Memcpy", BM_Memcpy)->Apply(chunkWidths);
  benchmark::RegisterBenchmark("ChunkWidth/BM_Preprocess<DWHC, Float16, Auto>",
                               BM_Preprocess<DeviceLayout::DWHC, DType::Float16, ConversionPath::Auto>)
      ->Apply(chunkWidths);
  benchmark::RegisterBenchmark("ChunkWidth/BM_Postprocess<DWHC, Float, Auto>",
                               BM_Postprocess<DeviceLayout::DWHC, DType::Float, ConversionPath::Auto>)
      ->Apply(chunkWidths);
  for (auto* row : {benchmark::RegisterBenchmark("ChunkWidth/BM_PostprocessOffset", BM_PostprocessOffset),
                    benchmark::RegisterBenchmark("ChunkWidth/BM_MemcpyOffset", BM_MemcpyOffset)}) {
    row->Args({1, 20, 56, 56, 0})->Args({1, 20, 56, 56, 16})->Args({1, 20, 56, 56, 32})->Args({1, 20, 56, 56, 48});
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
