// SPDX-License-Identifier: Apache-2.0
// MXINT8 encoding with AVX-512 (F/BW/VL/DQ by function attribute; called only after
// cpuHasAvx512()). A full block is two vectors: their magnitudes' bits reduced to the block's
// largest, the scale decided by the shared blockScale, then multiply, round, saturate and narrow
// with four instructions per vector. A short last block, and blocks whose codes are zeros or
// need double, take the shared loops (Mxint8Blocks.hpp), so the rule stays written once.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's avx512fintrin.h (see Avx512Common.hpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/mx/Mxint8Blocks.hpp"
#include "kernels/mx/Mxint8Kernels.hpp"

namespace qaic::kernels::mx::detail {
namespace {

// vcvtps2dq rounds in the current rounding mode, to nearest with ties to even as roundToEven does;
// the rounded values lie in [-128, 128], so raising them to -127 and narrowing with signed
// saturation (128 to 127) is elementCode's clamp.
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq"), gnu::always_inline]] inline void storeCodes(__m512 values,
                                                                                                 __m512 multiplier,
                                                                                                 int8_t* codes) {
  const __m512i rounded = _mm512_cvtps_epi32(_mm512_mul_ps(values, multiplier));
  const __m128i narrowed = _mm512_cvtsepi32_epi8(_mm512_max_epi32(rounded, _mm512_set1_epi32(-kMxint8MaxCode)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(codes), narrowed);
}

// Elements 0-15 in `low`, 16-31 in `high`.
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq"), gnu::always_inline]] inline void encodeFullBlock(
    __m512 low, __m512 high, int8_t* codes, std::byte* scaleCode) {
  const __m512i magnitudeMask = _mm512_set1_epi32(static_cast<int>(kFloatMagnitudeMask));
  const __m512i magnitudes = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(low), magnitudeMask),
                                              _mm512_and_si512(_mm512_castps_si512(high), magnitudeMask));
  const BlockScale scale = blockScale(_mm512_reduce_max_epu32(magnitudes));
  *scaleCode = static_cast<std::byte>(scale.code);
  if (scale.codes != BlockScale::Codes::ByMultiplier) {
    alignas(64) float values[kMxint8BlockElements];
    _mm512_store_ps(values, low);
    _mm512_store_ps(values + 16, high);
    blockCodes(values, FullBlock{}, scale, codes);
    return;
  }
  const __m512 multiplier = _mm512_set1_ps(scale.multiplier);
  storeCodes(low, multiplier, codes);
  storeCodes(high, multiplier, codes + 16);
}

}  // namespace

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void encodeFloatsAvx512(const float* values, std::size_t count,
                                                                              std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  std::byte* scales = out + count;
  const std::size_t fullBlocks = count / kMxint8BlockElements;
  for (std::size_t b = 0; b < fullBlocks; ++b) {
    const float* block = values + b * kMxint8BlockElements;
    encodeFullBlock(_mm512_loadu_ps(block), _mm512_loadu_ps(block + 16), codes + b * kMxint8BlockElements, scales + b);
  }
  const std::size_t first = fullBlocks * kMxint8BlockElements;
  if (first < count) encodeBlock(values + first, count - first, codes + first, scales + fullBlocks);
}

// vcvtph2ps widens exactly, as halfToFloat does (a NaN stays a NaN, which is all the encoding
// looks at).
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void encodeHalvesAvx512(const uint16_t* halves, std::size_t count,
                                                                              std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  std::byte* scales = out + count;
  const std::size_t fullBlocks = count / kMxint8BlockElements;
  for (std::size_t b = 0; b < fullBlocks; ++b) {
    const uint16_t* block = halves + b * kMxint8BlockElements;
    encodeFullBlock(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block))),
                    _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16))),
                    codes + b * kMxint8BlockElements, scales + b);
  }
  const std::size_t first = fullBlocks * kMxint8BlockElements;
  if (first < count) encodeHalvesBlock(halves + first, count - first, codes + first, scales + fullBlocks);
}

}  // namespace qaic::kernels::mx::detail
