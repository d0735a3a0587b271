// SPDX-License-Identifier: Apache-2.0
// E8M0, the shared block scale of every OCP Microscaling (MX v1.0) format: an unsigned 8-bit
// exponent with bias 127 and no mantissa, so a scale is always a power of two, 2^(code - 127).
// Code 255 is NaN. The one implementation of the scale for MXFP6 weights (Mxfp6Format.hpp) and
// MXINT8 data between cards (Mxint8Format.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qaic::kernels::mx {

inline constexpr uint8_t kE8m0Nan = 255;
inline constexpr uint8_t kE8m0MaxCode = 254;  // 2^127, the largest scale
inline constexpr int kE8m0Bias = 127;

// The code of the scale 2^sharedExponent, clamped to the representable [2^-127, 2^127].
inline uint8_t e8m0Code(int sharedExponent) {
  return static_cast<uint8_t>(std::clamp(sharedExponent + kE8m0Bias, 0, int{kE8m0MaxCode}));
}

// 2^(code - 127) (2^-127 is a float subnormal, exact); NaN for code 255.
inline float e8m0Value(uint8_t code) {
  if (code == kE8m0Nan) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int{code} - kE8m0Bias);
}

}  // namespace qaic::kernels::mx
