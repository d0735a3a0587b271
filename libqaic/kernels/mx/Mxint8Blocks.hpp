// SPDX-License-Identifier: Apache-2.0
// The block-level MXINT8 encode and decode, written once as plain loops that gcc vectorizes, for
// the files that compile them under each instruction set's function attribute
// (Mxint8Kernels.cpp, Mxint8Avx512.cpp). The rule is mxint8ScaleCode / mxint8ElementCode's
// (Mxint8Format.cpp); this computes the same numbers the quick way, and the unit tests compare
// every path with those functions. Internal linkage throughout, as in kernels/format: nothing
// here is emitted once for a wide instruction set and then shared with a narrow caller.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/format/Half.hpp"
#include "kernels/mx/E8m0.hpp"
#include "kernels/mx/Mxint8Format.hpp"

namespace qaic::kernels::mx::detail {
namespace {

using FullBlock = std::integral_constant<std::size_t, kMxint8BlockElements>;

constexpr uint32_t kFloatInfinityBits = 0x7F800000u;
constexpr uint32_t kFloatMagnitudeMask = 0x7FFFFFFFu;
// Scale codes below this need a multiplier 2^(127 + 6 - code) beyond float's range: those blocks
// go through mxint8ElementCode in double (their values are below 2^-121, so it is rare).
constexpr int kFloatMultiplierMinCode = kE8m0Bias - kMxint8ElementExponent - 127;

// 2^k from its bits for float's normal exponents (ldexp per block would cost as much as the
// block's elements), ldexp below them.
inline float powerOfTwo(int k) {
  if (k < -126 || k > 127) return std::ldexp(1.0f, k);
  return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23);
}

// What a block's largest magnitude, as float bits with the sign cleared, makes of it. Integer
// order of those bits is the magnitudes' order, and a pattern from the infinity's up is an
// infinity or a NaN, so the vector code finds the bits with an unsigned max.
struct BlockScale {
  enum class Codes : uint8_t { Zero, InDouble, ByMultiplier };
  uint8_t code = 0;
  Codes codes = Codes::Zero;
  float multiplier = 0;  // ByMultiplier: value * multiplier is the code before rounding
};

inline BlockScale blockScale(uint32_t amaxBits) {
  if (amaxBits == 0) return {0, BlockScale::Codes::Zero};
  if (amaxBits >= kFloatInfinityBits) return {kE8m0Nan, BlockScale::Codes::Zero};
  // floor(log2(amax)) is the exponent field less the bias; a subnormal amax (below 2^-126)
  // takes E8M0's smallest scale, as mxint8ScaleCode says.
  const uint8_t code = amaxBits < 0x00800000u ? 0 : e8m0Code(static_cast<int>(amaxBits >> 23) - 127);
  if (code < kFloatMultiplierMinCode) return {code, BlockScale::Codes::InDouble};
  return {code, BlockScale::Codes::ByMultiplier, powerOfTwo(kE8m0Bias - kMxint8ElementExponent - int{code})};
}

// Rounds |q| < 2^22 to the nearest integer, ties to even, in the default rounding mode: adding
// 1.5 * 2^23 leaves no fraction bits. Vectorizes where nearbyint does not.
inline float roundToEven(float q) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  return (q + kShift) - kShift;
}

// value * multiplier rounded and saturated. The rounded value lies in [-128, 128] (a block's
// amax / scale is below 2), so it converts to int exactly, and gcc vectorizes an integer clamp
// into min/max where a float one became compares and masks.
inline int8_t elementCode(float value, float multiplier) {
  const int rounded = static_cast<int>(roundToEven(value * multiplier));
  return static_cast<int8_t>(std::clamp(rounded, -kMxint8MaxCode, kMxint8MaxCode));
}

// The codes of a block whose scale is known. A block of n <= 32 floats: n is a constant for
// full blocks, since gcc vectorizes a loop of known length without a scalar remainder.
template <typename Length>
[[gnu::always_inline]] inline void blockCodes(const float* __restrict values, Length n, const BlockScale& scale,
                                              int8_t* __restrict codes) {
  switch (scale.codes) {
    case BlockScale::Codes::Zero:
      for (std::size_t i = 0; i < n; ++i) codes[i] = 0;
      return;
    case BlockScale::Codes::InDouble:
      for (std::size_t i = 0; i < n; ++i) codes[i] = mxint8ElementCode(values[i], scale.code);
      return;
    case BlockScale::Codes::ByMultiplier:
      for (std::size_t i = 0; i < n; ++i) codes[i] = elementCode(values[i], scale.multiplier);
      return;
  }
}

template <typename Length>
[[gnu::always_inline]] inline void encodeBlock(const float* __restrict values, Length n, int8_t* __restrict codes,
                                               std::byte* scaleCode) {
  uint32_t amaxBits = 0;
  for (std::size_t i = 0; i < n; ++i)
    amaxBits = std::max(amaxBits, std::bit_cast<uint32_t>(values[i]) & kFloatMagnitudeMask);
  const BlockScale scale = blockScale(amaxBits);
  *scaleCode = static_cast<std::byte>(scale.code);
  blockCodes(values, n, scale, codes);
}

[[gnu::always_inline]] inline void encodeFloatsPass(const float* values, std::size_t count, std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  std::byte* scales = out + count;
  const std::size_t fullBlocks = count / kMxint8BlockElements;
  for (std::size_t b = 0; b < fullBlocks; ++b) {
    const std::size_t first = b * kMxint8BlockElements;
    encodeBlock(values + first, FullBlock{}, codes + first, scales + b);
  }
  const std::size_t first = fullBlocks * kMxint8BlockElements;
  if (first < count) encodeBlock(values + first, count - first, codes + first, scales + fullBlocks);
}

// The short last block of float16 input (every block, on the Scalar path), widened by the
// project's one float16 conversion; the vector paths widen their full blocks with vcvtph2ps.
[[gnu::always_inline]] inline void encodeHalvesBlock(const uint16_t* halves, std::size_t n, int8_t* codes,
                                                     std::byte* scaleCode) {
  float block[kMxint8BlockElements];
  for (std::size_t i = 0; i < n; ++i) block[i] = halfToFloat(halves[i]);
  encodeBlock(block, n, codes, scaleCode);
}

// The Scalar path: each block widened into a float block, then encoded as floats are.
[[gnu::always_inline]] inline void encodeHalvesPass(const uint16_t* halves, std::size_t count, std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  std::byte* scales = out + count;
  float block[kMxint8BlockElements];
  const std::size_t fullBlocks = count / kMxint8BlockElements;
  for (std::size_t b = 0; b < fullBlocks; ++b) {
    const std::size_t first = b * kMxint8BlockElements;
    for (std::size_t i = 0; i < kMxint8BlockElements; ++i) block[i] = halfToFloat(halves[first + i]);
    encodeBlock(block, FullBlock{}, codes + first, scales + b);
  }
  const std::size_t first = fullBlocks * kMxint8BlockElements;
  if (first < count) encodeHalvesBlock(halves + first, count - first, codes + first, scales + fullBlocks);
}

inline float decodeFactor(std::byte scaleCode) {
  const auto code = std::to_integer<uint8_t>(scaleCode);
  return code == kE8m0Nan ? NAN : powerOfTwo(int{code} - kE8m0Bias + kMxint8ElementExponent);
}

template <bool kAccumulate, typename Length>
[[gnu::always_inline]] inline void decodeSpan(const int8_t* __restrict codes, Length n, float factor,
                                              float* __restrict out) {
  for (std::size_t k = 0; k < n; ++k) {
    const float value = static_cast<float>(codes[k]) * factor;
    if constexpr (kAccumulate)
      out[k] += value;
    else
      out[k] = value;
  }
}

// Elements [begin, end): a partial block at either end (a chunk of an op need not be aligned),
// whole blocks of constant length between.
template <bool kAccumulate>
[[gnu::always_inline]] inline void decodePass(const std::byte* encoded, std::size_t count, std::size_t begin,
                                              std::size_t end, float* out) {
  const auto* codes = reinterpret_cast<const int8_t*>(encoded);
  const std::byte* scales = encoded + count;
  std::size_t i = begin;
  while (i < end) {
    const std::size_t block = i / kMxint8BlockElements;
    const std::size_t stop = std::min(end, (block + 1) * kMxint8BlockElements);
    const float factor = decodeFactor(scales[block]);
    if (stop - i == kMxint8BlockElements)
      decodeSpan<kAccumulate>(codes + i, FullBlock{}, factor, out + (i - begin));
    else
      decodeSpan<kAccumulate>(codes + i, stop - i, factor, out + (i - begin));
    i = stop;
  }
}

}  // namespace
}  // namespace qaic::kernels::mx::detail
