// SPDX-License-Identifier: Apache-2.0
// Investigation rows (off by default, BENCH_CHUNK_WIDTHS=1): the memory accesses of the DWHC
// conversions on images whose H and W are multiples of 8, without their arithmetic. A step loads
// and stores what a kernel step does, at the same addresses and in the same order, but stores the
// loaded vectors untransposed: the output is meaningless and the time is the access pattern's
// alone. Its ratio to memcpy in the same run bounds what a kernel that moves the data this way
// can reach on the machine (docs/formats/device-format.md, "The access-pattern bound").
// Preprocess follows the product kernel's order; postprocess the fastest order measured for
// these shapes (whole lines of eight columns; the product kernel reads 32-byte runs of sixteen).
// Compiled with -mavx2 (CMakeLists.txt); registered only when the CPU has AVX2.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "PageAlignedBuffer.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace {

// Postprocess, float device, chunks of 8 or 4 channels: per step one 64-byte line (16 elements:
// rows h..h + 16 / K - 1 of a column's chunk) from each of eight columns, and sixteen 32-byte user
// row segments (element e of the line goes to plane e % K, row h + e / K).
template <int kK>
void postprocessChunk(const float* chunk, float* planes, int64_t H, int64_t W) {
  const int64_t column = H * kK, plane = H * W;
  for (int64_t h = 0; h < H; h += 16 / kK) {
    for (int64_t w0 = 0; w0 < W; w0 += 8) {
      const float* line = chunk + w0 * column + h * kK;
      __m256 r[16];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        r[2 * j] = _mm256_loadu_ps(line + j * column);
        r[2 * j + 1] = _mm256_loadu_ps(line + j * column + 8);
      }
      float* segment = planes + h * W + w0;
#pragma GCC unroll 16
      for (int e = 0; e < 16; ++e) _mm256_storeu_ps(segment + (e % kK) * plane + (e / kK) * W, r[e]);
    }
  }
}

void postprocessPattern(const float* device, float* user, int64_t C, int64_t H, int64_t W) {
  for (int64_t c0 = 0; c0 < C; c0 += 8) {
    const float* chunk = device + c0 * H * W;
    float* planes = user + c0 * H * W;
    if (C - c0 >= 8) {
      postprocessChunk<8>(chunk, planes, H, W);
    } else {
      postprocessChunk<4>(chunk, planes, H, W);
    }
  }
}

// Preprocess, float16 device (the kernel's order for cached images with H, W multiples of 8):
// bands of eight rows; per step sixteen floats from each of the eight planes' row h at w0 and one
// 16-byte pixel into each of sixteen columns; a last column of eight (W = 56) eight floats and
// eight pixels.
void preprocessPattern(const float* user, uint16_t* device, int64_t C, int64_t H, int64_t W) {
  const int64_t column = H * 8, plane = H * W;
  for (int64_t c0 = 0; c0 < C; c0 += 8) {
    const float* planes = user + c0 * plane;
    uint16_t* chunk = device + c0 * plane;
    for (int64_t h0 = 0; h0 < H; h0 += 8) {
      for (int64_t w0 = 0; w0 + 16 <= W; w0 += 16) {
        for (int64_t h = h0; h < h0 + 8; ++h) {
          const float* segment = planes + h * W + w0;
          __m256i r[16];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) {
            r[2 * i] = _mm256_castps_si256(_mm256_loadu_ps(segment + i * plane));
            r[2 * i + 1] = _mm256_castps_si256(_mm256_loadu_ps(segment + i * plane + 8));
          }
          uint16_t* pixel = chunk + w0 * column + h * 8;
#pragma GCC unroll 16
          for (int j = 0; j < 16; ++j) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(pixel + j * column), _mm256_castsi256_si128(r[j]));
          }
        }
      }
      if (W % 16 == 0) continue;
      const int64_t w0 = W - 8;
      for (int64_t h = h0; h < h0 + 8; ++h) {
        __m256i r[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) r[i] = _mm256_castps_si256(_mm256_loadu_ps(planes + i * plane + h * W + w0));
        uint16_t* pixel = chunk + w0 * column + h * 8;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(pixel + j * column), _mm256_castsi256_si128(r[j]));
        }
      }
    }
  }
}

template <bool kToDevice>
void BM_AccessPattern(benchmark::State& state) {
  const int64_t C = state.range(1), H = state.range(2), W = state.range(3);
  if (state.range(0) != 1 || C % (kToDevice ? 8 : 4) != 0 || H % 8 != 0 || W % 8 != 0) {
    state.SkipWithError("the pattern rows take N = 1, H and W multiples of 8, C of 8 (postprocess: of 4)");
    return;
  }
  const int64_t count = C * H * W;
  std::vector<float> user(static_cast<std::size_t>(count), 1.0f);
  const qaic::bench::PageAlignedBuffer device(static_cast<std::size_t>(count) * (kToDevice ? 2 : 4));
  for (auto _ : state) {
    if constexpr (kToDevice) {
      preprocessPattern(user.data(), reinterpret_cast<uint16_t*>(device.data()), C, H, W);
      benchmark::DoNotOptimize(device.data());
    } else {
      postprocessPattern(reinterpret_cast<const float*>(device.data()), user.data(), C, H, W);
      benchmark::DoNotOptimize(user.data());
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * count * static_cast<int64_t>(sizeof(float)));
}

const bool kAccessPatternRows = [] {
  if (std::getenv("BENCH_CHUNK_WIDTHS") == nullptr || !qaic::kernels::vectorPathAvailable()) return false;
  for (const int64_t c : {8, 16, 20, 24}) {
    benchmark::RegisterBenchmark("ChunkWidth/BM_PostprocessAccessPattern", BM_AccessPattern<false>)
        ->Args({1, c, 56, 56});
  }
  for (const int64_t c : {8, 16, 24}) {
    benchmark::RegisterBenchmark("ChunkWidth/BM_PreprocessAccessPattern", BM_AccessPattern<true>)->Args({1, c, 56, 56});
  }
  return true;
}();

}  // namespace
