// SPDX-License-Identifier: Apache-2.0
// Building blocks shared by the F16C/AVX2 conversion kernels. Include only from files compiled
// with -mf16c -mavx2 or the AVX-512 flags (see CMakeLists.txt); their code runs only after
// cpuHasF16cAvx2().
//
// Everything here has internal linkage (an unnamed namespace), so that each kernel file keeps
// the copy compiled with its own flags. As ordinary inline functions, an unoptimised (Debug)
// build emits them as weak symbols in every such file, and the linker keeps one copy for all:
// if it kept DwhcTilesAvx512.cpp's, the AVX2 kernels would run its vshuff32x4 (AVX-512VL) on a
// CPU without AVX-512.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/format/DeviceFormat.hpp"

namespace qaic::kernels::format {
namespace {

// r[i][j] <- r[j][i] for an 8x8 tile of floats.
inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
  const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
  const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
  const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// x0..x3 <- their 4x4 transpose, in each 128-bit lane separately.
inline void transpose4x4Lanes(__m256& x0, __m256& x1, __m256& x2, __m256& x3) {
  const __m256 t0 = _mm256_unpacklo_ps(x0, x1);
  const __m256 t1 = _mm256_unpackhi_ps(x0, x1);
  const __m256 t2 = _mm256_unpacklo_ps(x2, x3);
  const __m256 t3 = _mm256_unpackhi_ps(x2, x3);
  x0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  x1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  x2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  x3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}

// r[j] = column j of the 8x8 tile whose row s starts at row(s). Loading rows s and s + 4 into the
// two lanes of one register leaves only in-lane 4x4 transposes: 16 shuffles instead of 24.
template <typename RowAddress>
inline void loadTransposed8x8(RowAddress row, __m256 r[8]) {
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) {
    const float* top = row(s);
    const float* bottom = row(s + 4);
    r[s] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(top)), _mm_loadu_ps(bottom), 1);
    r[s + 4] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(top + 4)), _mm_loadu_ps(bottom + 4), 1);
  }
  transpose4x4Lanes(r[0], r[1], r[2], r[3]);
  transpose4x4Lanes(r[4], r[5], r[6], r[7]);
}

// The same for 16-bit elements, in each 128-bit lane separately.
inline void transpose8x8Epi16(__m256i r[8]) {
  const __m256i t0 = _mm256_unpacklo_epi16(r[0], r[1]);
  const __m256i t1 = _mm256_unpackhi_epi16(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi16(r[2], r[3]);
  const __m256i t3 = _mm256_unpackhi_epi16(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi16(r[4], r[5]);
  const __m256i t5 = _mm256_unpackhi_epi16(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi16(r[6], r[7]);
  const __m256i t7 = _mm256_unpackhi_epi16(r[6], r[7]);
  const __m256i u0 = _mm256_unpacklo_epi32(t0, t2);  // columns 0, 1 of rows 0..3
  const __m256i u1 = _mm256_unpackhi_epi32(t0, t2);  // columns 2, 3
  const __m256i u2 = _mm256_unpacklo_epi32(t1, t3);  // columns 4, 5
  const __m256i u3 = _mm256_unpackhi_epi32(t1, t3);  // columns 6, 7
  const __m256i u4 = _mm256_unpacklo_epi32(t4, t6);  // the same for rows 4..7
  const __m256i u5 = _mm256_unpackhi_epi32(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi32(t5, t7);
  const __m256i u7 = _mm256_unpackhi_epi32(t5, t7);
  r[0] = _mm256_unpacklo_epi64(u0, u4);
  r[1] = _mm256_unpackhi_epi64(u0, u4);
  r[2] = _mm256_unpacklo_epi64(u1, u5);
  r[3] = _mm256_unpackhi_epi64(u1, u5);
  r[4] = _mm256_unpacklo_epi64(u2, u6);
  r[5] = _mm256_unpackhi_epi64(u2, u6);
  r[6] = _mm256_unpacklo_epi64(u3, u7);
  r[7] = _mm256_unpackhi_epi64(u3, u7);
}

// n (1..8) floats; the lanes past n read as zero / are not written.
inline __m256 loadFloats(const float* p, int64_t n) {
  if (n == 8) return _mm256_loadu_ps(p);
  alignas(32) float tmp[8] = {};
  std::memcpy(tmp, p, static_cast<std::size_t>(n) * sizeof(float));
  return _mm256_load_ps(tmp);
}

inline void storeFloats(float* p, __m256 v, int64_t n) {
  if (n == 8) return _mm256_storeu_ps(p, v);
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  std::memcpy(p, tmp, static_cast<std::size_t>(n) * sizeof(float));
}

// Device elements: float16 (IEEE, round to nearest even) or float, eight at a time.
template <bool kHalf>
struct DeviceIo {
  using Element = std::conditional_t<kHalf, uint16_t, float>;
  static __m256 load8(const Element* p) {
    if constexpr (kHalf) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
      return _mm256_loadu_ps(p);
    }
  }
  static void store8(Element* p, __m256 v) {
    if constexpr (kHalf) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm256_storeu_ps(p, v);
    }
  }
  static __m256 load(const Element* p, int64_t n) {
    if (n == 8) return load8(p);
    if constexpr (kHalf) {
      alignas(16) uint16_t tmp[8] = {};
      std::memcpy(tmp, p, static_cast<std::size_t>(n) * sizeof(uint16_t));
      return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
    } else {
      return loadFloats(p, n);
    }
  }
  static void store(Element* p, __m256 v, int64_t n) {
    if (n == 8) return store8(p, v);
    if constexpr (kHalf) {
      alignas(16) uint16_t tmp[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
      std::memcpy(p, tmp, static_cast<std::size_t>(n) * sizeof(uint16_t));
    } else {
      storeFloats(p, v, n);
    }
  }
};

// Where a chunk's pixel (w, h) starts (see DeviceFormat.hpp for the offsets).
struct ChunkAddress {
  int64_t base;      // first element of the chunk
  int64_t channels;  // channels in the chunk (1..8)
  int64_t wStride;   // elements between neighbouring w
  int64_t hStride;   // elements between neighbouring h
};

inline ChunkAddress chunkAddress(const DeviceGeometry& g, ir::DeviceLayout layout, int64_t d, int64_t c0) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  const int64_t chunk = C - c0 < 8 ? C - c0 : 8;
  const int64_t base = d * (W * H * C) + (c0 / 8) * (W * H * 8);
  if (layout == ir::DeviceLayout::DWHC) return {base, chunk, H * chunk, chunk};
  return {base, chunk, chunk, W * chunk};
}

// rows[e] for e < count: the user offset, relative to (c0, h0, w0), of tile row e of a chunk of
// `channels` channels. A tile's rows are consecutive elements of each device column: element e is
// channel e % channels of row h0 + e / channels.
inline void tileRowOffsets(const DeviceGeometry& g, int64_t channels, int count, int64_t* rows) {
  for (int e = 0; e < count; ++e) rows[e] = (e % channels) * g.height * g.width + (e / channels) * g.width;
}

// Calls f(std::integral_constant<int, n>) for a runtime n in 1..kMax, and
// f(std::integral_constant<int, kOther>) for any other n, so that a kernel can unroll over n.
template <int kMax, int kOther, typename F>
void withConstant(int64_t n, F&& f) {
  [&]<int... kI>(std::integer_sequence<int, kI...>) {
    const bool matched = ((n == kI + 1 && (f(std::integral_constant<int, kI + 1>{}), true)) || ...);
    if (!matched) f(std::integral_constant<int, kOther>{});
  }
  (std::make_integer_sequence<int, kMax>{});
}

// A chunk's channel count (1..8) as a constant.
template <typename F>
void withChannelCount(int64_t n, F&& f) {
  withConstant<8, 8>(n, f);
}

}  // namespace
}  // namespace qaic::kernels::format
