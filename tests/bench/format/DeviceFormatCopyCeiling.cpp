// SPDX-License-Identifier: Apache-2.0
// Reference rows: the ceiling of a conversion kernel. Each row moves the user bytes of a shape
// with the instructions the kernels are made of (ordinary 32-byte AVX2 or 64-byte AVX-512 loads
// and stores, vcvtps2ph for float16) but in one sequential stream each way, with no transpose:
// `Copy` writes the floats back as they are (a postprocess's traffic), `ToFloat16` writes them
// as float16 (a preprocess's). A conversion has to touch the same bytes and cannot order them
// better, so its ratio to memcpy cannot exceed these rows' ratio in the same run. memcpy itself
// is glibc's, which on this kind of machine copies cache-sized buffers with `rep movsb` and so
// avoids the read of each destination line that an ordinary store makes
// (docs/formats/device-format.md, "What a plain copy reaches").
// Compiled with -mavx2 -mf16c; the AVX-512 variants carry their own target attribute and are
// registered only when the CPU has the kernels' AVX-512 family.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "DeviceFormatShapes.hpp"
#include "PageAlignedBuffer.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace {

enum class Width { Avx2, Avx512 };

// Both buffers page-aligned and a multiple of 64 floats long (the shapes' counts are).
void copyAvx2(const float* src, float* dst, int64_t count) {
  for (int64_t i = 0; i < count; i += 32) {
    const __m256 a = _mm256_load_ps(src + i), b = _mm256_load_ps(src + i + 8);
    const __m256 c = _mm256_load_ps(src + i + 16), d = _mm256_load_ps(src + i + 24);
    _mm256_store_ps(dst + i, a);
    _mm256_store_ps(dst + i + 8, b);
    _mm256_store_ps(dst + i + 16, c);
    _mm256_store_ps(dst + i + 24, d);
  }
}

void toFloat16Avx2(const float* src, uint16_t* dst, int64_t count) {
  for (int64_t i = 0; i < count; i += 32) {
#pragma GCC unroll 4
    for (int j = 0; j < 32; j += 8) {
      __m128i half = _mm256_cvtps_ph(_mm256_load_ps(src + i + j), _MM_FROUND_TO_NEAREST_INT);
      asm("" : "+x"(half));
      _mm_store_si128(reinterpret_cast<__m128i*>(dst + i + j), half);
    }
  }
}

__attribute__((target("avx512f"))) void copyAvx512(const float* src, float* dst, int64_t count) {
  for (int64_t i = 0; i < count; i += 64) {
    const __m512 a = _mm512_load_ps(src + i), b = _mm512_load_ps(src + i + 16);
    const __m512 c = _mm512_load_ps(src + i + 32), d = _mm512_load_ps(src + i + 48);
    _mm512_store_ps(dst + i, a);
    _mm512_store_ps(dst + i + 16, b);
    _mm512_store_ps(dst + i + 32, c);
    _mm512_store_ps(dst + i + 48, d);
  }
}

__attribute__((target("avx512f"))) void toFloat16Avx512(const float* src, uint16_t* dst, int64_t count) {
  for (int64_t i = 0; i < count; i += 64) {
#pragma GCC unroll 4
    for (int j = 0; j < 64; j += 16) {
      __m256i half = _mm512_maskz_cvtps_ph(0xFFFF, _mm512_load_ps(src + i + j), _MM_FROUND_TO_NEAREST_INT);
      asm("" : "+v"(half));
      _mm256_store_si256(reinterpret_cast<__m256i*>(dst + i + j), half);
    }
  }
}

template <bool kToFloat16, Width kWidth>
void BM_Ceiling(benchmark::State& state) {
  const int64_t count = state.range(0) * state.range(1) * state.range(2) * state.range(3);
  if (count % 64 != 0) {
    state.SkipWithError("the ceiling rows take element counts that are multiples of 64");
    return;
  }
  const qaic::bench::PageAlignedBuffer user(static_cast<std::size_t>(count) * sizeof(float));
  const qaic::bench::PageAlignedBuffer out(static_cast<std::size_t>(count) * (kToFloat16 ? 2 : 4));
  const auto* src = reinterpret_cast<const float*>(user.data());
  for (auto _ : state) {
    if constexpr (kToFloat16) {
      auto* dst = reinterpret_cast<uint16_t*>(out.data());
      kWidth == Width::Avx512 ? toFloat16Avx512(src, dst, count) : toFloat16Avx2(src, dst, count);
    } else {
      auto* dst = reinterpret_cast<float*>(out.data());
      kWidth == Width::Avx512 ? copyAvx512(src, dst, count) : copyAvx2(src, dst, count);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * count * static_cast<int64_t>(sizeof(float)));
}

const bool kCeilingRows = [] {
  if (!qaic::kernels::vectorPathAvailable()) return false;
  if (qaic::kernels::avx512PathAvailable()) {
    benchmark::RegisterBenchmark("BM_Ceiling<Copy, Avx512>", BM_Ceiling<false, Width::Avx512>)
        ->Apply(qaic::bench::deviceFormatShapes);
    benchmark::RegisterBenchmark("BM_Ceiling<ToFloat16, Avx512>", BM_Ceiling<true, Width::Avx512>)
        ->Apply(qaic::bench::deviceFormatShapes);
  }
  benchmark::RegisterBenchmark("BM_Ceiling<Copy, Avx2>", BM_Ceiling<false, Width::Avx2>)
      ->Apply(qaic::bench::deviceFormatShapes);
  benchmark::RegisterBenchmark("BM_Ceiling<ToFloat16, Avx2>", BM_Ceiling<true, Width::Avx2>)
      ->Apply(qaic::bench::deviceFormatShapes);
  return true;
}();

}  // namespace
