// SPDX-License-Identifier: Apache-2.0
// Building blocks of the AVX-512 conversion kernels (DwhcTilesAvx512.cpp, DwhcSweepsAvx512.cpp).
// Include only from files compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mf16c -mavx2;
// their code runs only after cpuHasAvx512(). Internal linkage throughout, for the reason given in
// Avx2Common.hpp (each instruction-set file keeps its own copy).
#pragma once

// GCC 12's avx512fintrin.h initialises its "undefined" vectors from themselves, which
// -Wuninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13). Clang (the
// fuzz build) neither has the problem nor knows -Wmaybe-uninitialized. Only the AVX-512 kernel
// files include this header, so the pragmas stay in them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/format/Avx2Common.hpp"

namespace qaic::kernels::format {
namespace {

// p + n, computed where it is used. Without the barrier GCC hoists every multiple of a
// runtime stride out of the loops (16 device columns, 8 planes) and spills them: rowPairLines8
// ran at 59-61 GB/s that way in a harness, 66-68 with the barrier, 68-72 with the strides as
// compile-time constants.
template <typename T>
[[gnu::always_inline]] inline T* stepped(T* p, int64_t n) {
  p += n;
  asm("" : "+r"(p));
  return p;
}

// The 16x16 transpose of the tile whose row i is load(i): store(j, column j). In-lane 4x4
// transposes of four rows at a time (32 shuffles), then the 4x4 transpose of the 128-bit lanes
// (32 lane shuffles), each column stored as soon as it is complete. Loading and transposing
// four rows at a time keeps the tile in registers; forced inline, because as a call (or with all
// sixteen rows loaded first) the tile went through the stack and the kernel ran at half the
// speed of the AVX2 one.
template <typename Load, typename Store>
[[gnu::always_inline]] inline void transposeTile(Load load, Store store) {
  __m512 u[16];  // u[4q + m], lane L: element 4L + m of rows 4q..4q+3
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512 r0 = load(4 * q), r1 = load(4 * q + 1), r2 = load(4 * q + 2), r3 = load(4 * q + 3);
    const __m512 t0 = _mm512_unpacklo_ps(r0, r1), t1 = _mm512_unpackhi_ps(r0, r1);
    const __m512 t2 = _mm512_unpacklo_ps(r2, r3), t3 = _mm512_unpackhi_ps(r2, r3);
    u[4 * q + 0] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * q + 1] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * q + 2] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * q + 3] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44);  // lanes 0, 1 of both
    const __m512 v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);  // lanes 2, 3
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
    store(m, _mm512_shuffle_f32x4(v0, w0, 0x88));       // lane 0 of u[m], u[4+m], u[8+m], u[12+m]
    store(4 + m, _mm512_shuffle_f32x4(v0, w0, 0xDD));   // lane 1
    store(8 + m, _mm512_shuffle_f32x4(v1, w1, 0x88));   // lane 2
    store(12 + m, _mm512_shuffle_f32x4(v1, w1, 0xDD));  // lane 3
  }
}

// Device elements, 16 at a time; `mask` selects the first n of them at the edges.
template <bool kHalf>
struct DeviceIo16 {
  using Element = std::conditional_t<kHalf, uint16_t, float>;
  static __m512 load(const Element* p) {
    if constexpr (kHalf) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return _mm512_loadu_ps(p);
    }
  }
  static __m512 load(const Element* p, __mmask16 mask) {
    if constexpr (kHalf) {
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    } else {
      return _mm512_maskz_loadu_ps(mask, p);
    }
  }
  static void store(Element* p, __m512 v) {
    if constexpr (kHalf) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm512_storeu_ps(p, v);
    }
  }
  static void store(Element* p, __m512 v, __mmask16 mask) {
    if constexpr (kHalf) {
      _mm256_mask_storeu_epi16(p, mask, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm512_mask_storeu_ps(p, mask, v);
    }
  }
};

// r[i] <- the 8x8 transpose of each 256-bit half of r[0..7] separately (both halves at once:
// 8 unpacks, 8 shuffles and 8 two-input lane permutes).
[[gnu::always_inline]] inline void transposeHalves8x8(__m512 r[8]) {
  // Lane 0 of a, lane 0 of b, lane 2 of a, lane 2 of b (and lanes 1 / 3): the last stage.
  const __m512i low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
  const __m512i high = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
  const __m512 t4 = _mm512_unpacklo_ps(r[4], r[5]), t5 = _mm512_unpackhi_ps(r[4], r[5]);
  const __m512 t6 = _mm512_unpacklo_ps(r[6], r[7]), t7 = _mm512_unpackhi_ps(r[6], r[7]);
  const __m512 s[8] = {
      _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
      _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
      _mm512_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
      _mm512_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2))};
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm512_permutex2var_ps(s[i % 4], i < 4 ? low : high, s[4 + i % 4]);
}

// The run at lo (eight elements) and the run at hi as the low and high half of one vector.
template <bool kHalf>
[[gnu::always_inline]] inline __m512 runPair(const typename DeviceIo<kHalf>::Element* lo,
                                             const typename DeviceIo<kHalf>::Element* hi) {
  if constexpr (kHalf) {
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1));
  } else {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)), _mm256_loadu_ps(hi), 1);
  }
}

// The 16 device runs lo + j * column (element j) and hi + j * column (element 8 + j), j < 8,
// transposed: r[e] holds element e of each of the 16 runs, in run order.
template <bool kHalf>
[[gnu::always_inline]] inline void transposeRunPairs(const typename DeviceIo<kHalf>::Element* lo,
                                                     const typename DeviceIo<kHalf>::Element* hi, int64_t column,
                                                     __m512 r[8]) {
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = runPair<kHalf>(lo, hi);
    lo = stepped(lo, column);
    hi = stepped(hi, column);
  }
  transposeHalves8x8(r);
}

// The most tile steps a sweep unrolls (sweeps: DwhcSweepsAvx512.cpp, and wideTiles).
constexpr int kMaxUnrolledSteps = 8;

// The steps of a sweep as a constant: n in 1..kMaxUnrolledSteps, so that the kernel unrolls
// them, and 0 for any other n: the kernel's loop with a runtime count.
template <typename F>
void withUnrolledSteps(int64_t n, F&& f) {
  withConstant<kMaxUnrolledSteps, 0>(n, f);
}

}  // namespace
}  // namespace qaic::kernels::format
