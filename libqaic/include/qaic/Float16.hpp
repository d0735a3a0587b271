// SPDX-License-Identifier: Apache-2.0
// IEEE-754 binary16, the element type of BUFFER_DATA_TYPE_FLOAT16 buffers, to and from float:
// round to nearest even, quiet NaNs keep their top payload bits, bit-exact with the F16C
// instructions. The runtime's own conversions (preprocess, postprocess, the emulated device)
// use these same functions, so an application filling or checking a float16 buffer with them
// agrees with libqaic to the bit. Public headers stay C++17 (std::memcpy, not std::bit_cast);
// compilers turn these copies into register moves.
#pragma once

#include <cstdint>
#include <cstring>

namespace qaic::rt {

inline uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t exponent = (bits >> 23) & 0xFFu;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent == 0xFF) {  // Inf or NaN; a NaN becomes quiet as F16C makes it
    return static_cast<uint16_t>(sign | 0x7C00u | (mantissa ? (0x200u | (mantissa >> 13)) : 0u));
  }
  const int32_t halfExponent = static_cast<int32_t>(exponent) - 127 + 15;
  if (halfExponent >= 31) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow to Inf
  if (halfExponent <= 0) {
    if (halfExponent < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    mantissa |= 0x800000u;                                       // make the implicit bit explicit
    const uint32_t shift = static_cast<uint32_t>(14 - halfExponent);
    uint32_t half = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(halfExponent) << 10) | (mantissa >> 13);
  const uint32_t remainder = mantissa & 0x1FFFu;
  // A carry out of the mantissa correctly bumps the exponent (and can reach Inf).
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float halfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  uint32_t mantissa = half & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int32_t e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace qaic::rt
