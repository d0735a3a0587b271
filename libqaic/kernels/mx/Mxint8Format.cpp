// SPDX-License-Identifier: Apache-2.0
#include "kernels/mx/Mxint8Format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/format/Half.hpp"
#include "kernels/mx/E8m0.hpp"

namespace qaic::kernels::mx {
namespace {

// Scale codes below this need a multiplier 2^(127 + 6 - code) beyond float's range: those blocks
// scale in double (their values are below 2^-121, so it is rare and exact either way).
constexpr int kFloatMultiplierMinCode = kE8m0Bias - kMxint8ElementExponent - 127;

// Rounds |q| < 2^22 to the nearest integer, ties to even, in the default rounding mode: adding
// 1.5 * 2^23 leaves no fraction bits. Vectorizes where nearbyint does not.
inline float roundToEven(float q) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  return (q + kShift) - kShift;
}

// 2^k from its bits for float's normal exponents (a libm ldexp per block would cost as much as
// the block's elements), ldexp below them.
inline float powerOfTwo(int k) {
  if (k < -126 || k > 127) return std::ldexp(1.0f, k);
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline int8_t saturate(float rounded) {
  return static_cast<int8_t>(std::clamp(rounded, float{-kMxint8MaxCode}, float{kMxint8MaxCode}));
}

// Runs f(n) with n a constant for a full block: -O2 vectorizes only loops of a length it knows to
// leave no scalar remainder, and a block's loops are short enough for that to matter.
template <typename F>
void forBlockLength(std::size_t n, F&& f) {
  if (n == kMxint8BlockElements)
    f(std::integral_constant<std::size_t, kMxint8BlockElements>{});
  else
    f(n);
}

// One block of n <= 32 floats into its codes and scale. The largest magnitude comes from the
// bits (sign cleared, compared as integers): for floats that order is the magnitudes' order, and
// a bit pattern from the infinity's up is an infinity or a NaN.
void encodeBlock(const float* values, std::size_t count, int8_t* codes, std::byte* scale) {
  constexpr uint32_t kInfinityBits = 0x7F800000u;
  forBlockLength(count, [&](auto n) {
    uint32_t amaxBits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, values + i, sizeof bits);
      amaxBits = std::max(amaxBits, bits & 0x7FFFFFFFu);
    }
    if (amaxBits >= kInfinityBits || amaxBits == 0) {  // non-finite, or all zeros
      *scale = static_cast<std::byte>(amaxBits == 0 ? 0 : kE8m0Nan);
      std::fill(codes, codes + n, int8_t{0});
      return;
    }
    // floor(log2(amax)) is the exponent field less the bias; a subnormal amax (below 2^-126)
    // takes E8M0's smallest scale, as mxint8ScaleCode says.
    const uint8_t code = amaxBits < 0x00800000u ? 0 : e8m0Code(static_cast<int>(amaxBits >> 23) - 127);
    *scale = static_cast<std::byte>(code);
    if (code >= kFloatMultiplierMinCode) {
      const float multiplier = powerOfTwo(kE8m0Bias - kMxint8ElementExponent - int{code});
      for (std::size_t i = 0; i < n; ++i) codes[i] = saturate(roundToEven(values[i] * multiplier));
    } else {
      for (std::size_t i = 0; i < n; ++i) codes[i] = mxint8ElementCode(values[i], code);
    }
  });
}

template <typename Store>
void decodeRange(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out,
                 Store&& store) {
  const auto* codes = reinterpret_cast<const int8_t*>(encoded);
  const std::byte* scales = encoded + count;
  std::size_t i = begin;
  while (i < end) {
    const std::size_t block = i / kMxint8BlockElements;
    const std::size_t stop = std::min(end, (block + 1) * kMxint8BlockElements);
    const auto scaleCode = std::to_integer<uint8_t>(scales[block]);
    const float factor = scaleCode == kE8m0Nan ? NAN : powerOfTwo(int{scaleCode} - kE8m0Bias + kMxint8ElementExponent);
    const int8_t* from = codes + i;
    float* to = out + (i - begin);
    forBlockLength(stop - i, [&](auto n) {
      for (std::size_t k = 0; k < n; ++k) store(to[k], static_cast<float>(from[k]) * factor);
    });
    i = stop;
  }
}

}  // namespace

uint8_t mxint8ScaleCode(float amax) {
  if (amax == 0) return 0;
  return e8m0Code(std::ilogb(amax));  // the element type's largest power of two is 2^0
}

int8_t mxint8ElementCode(float value, uint8_t scaleCode) {
  // In double the division by the scale and the 2^6 are exact for every scale code.
  const double scaled = std::ldexp(double{value}, kE8m0Bias - kMxint8ElementExponent - int{scaleCode});
  return static_cast<int8_t>(std::clamp(std::nearbyint(scaled), double{-kMxint8MaxCode}, double{kMxint8MaxCode}));
}

float mxint8Value(int8_t code, uint8_t scaleCode) {
  if (scaleCode == kE8m0Nan) return NAN;
  return static_cast<float>(code) * std::ldexp(1.0f, int{scaleCode} - kE8m0Bias + kMxint8ElementExponent);
}

void encodeMxint8(const float* values, std::size_t count, std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  for (std::size_t b = 0, first = 0; first < count; ++b, first += kMxint8BlockElements) {
    encodeBlock(values + first, std::min(kMxint8BlockElements, count - first), codes + first, out + count + b);
  }
}

void encodeMxint8(const uint16_t* halves, std::size_t count, std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  float block[kMxint8BlockElements];
  for (std::size_t b = 0, first = 0; first < count; ++b, first += kMxint8BlockElements) {
    const std::size_t n = std::min(kMxint8BlockElements, count - first);
    for (std::size_t i = 0; i < n; ++i) block[i] = halfToFloat(halves[first + i]);
    encodeBlock(block, n, codes + first, out + count + b);
  }
}

void decodeMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out) {
  decodeRange(encoded, count, begin, end, out, [](float& slot, float value) { slot = value; });
}

void accumulateMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out) {
  decodeRange(encoded, count, begin, end, out, [](float& slot, float value) { slot += value; });
}

}  // namespace qaic::kernels::mx
