// SPDX-License-Identifier: Apache-2.0
// MXINT8 (OCP Microscaling Formats v1.0): blocks of 32 elements sharing one E8M0 scale, each
// element an 8-bit two's complement integer with an implicit scale of 2^-6. The activations a
// multi-device program compiled with -allow-mxint8-mdp-io sends between its cards travel so
// (ops/Collective.cpp); docs/formats/mxint8.md gives the rule and the layout byte by byte.
//
// Layout of n elements: n element codes (int8), then ceil(n / 32) scale codes; block b is elements
// [32b, 32b + 32) with scale byte n + b. The last block may be short (its scale from its own
// elements). A buffer of float32 shrinks to 33/128 of its bytes, a little under a quarter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/mx/MxPath.hpp"

namespace qaic::kernels::mx {

inline constexpr std::size_t kMxint8BlockElements = 32;
inline constexpr int kMxint8ElementExponent = -6;  // an element's value is code * 2^-6
inline constexpr int kMxint8MaxCode = 127;         // 1.984375; -128 (-2.0) decodes but is never written

inline std::size_t mxint8Blocks(std::size_t elements) {
  return (elements + kMxint8BlockElements - 1) / kMxint8BlockElements;
}
inline std::size_t mxint8EncodedBytes(std::size_t elements) { return elements + mxint8Blocks(elements); }

// The scale code of a block whose largest magnitude is `amax` (finite): floor(log2(amax)) + 127
// (the largest power of two of the element type is 2^0), clamped to E8M0's [0, 254]; 0 for 0.
uint8_t mxint8ScaleCode(float amax);
// `value` divided by the block's scale, times 64, rounded to the nearest integer (ties to even)
// and saturated to +-127. `value` must be finite and scaleCode below 255.
int8_t mxint8ElementCode(float value, uint8_t scaleCode);
// code * 2^(scaleCode - 127 - 6), exact in float; NaN for scale code 255.
float mxint8Value(int8_t code, uint8_t scaleCode);

// Which compiled body encodes and decodes (MxPath.hpp): Auto takes the widest the CPU has
// (AVX-512 F/BW/VL/DQ, else AVX2 with F16C, else Scalar, the baseline x86-64 build); a forced
// path the CPU lacks throws std::invalid_argument, and so does Avx512Vbmi, which MXINT8 has no
// body of. Every path writes the same bytes and floats (the functions above are the rule they
// all follow).
bool mxint8PathAvailable(MxPath path);

// `count` values encoded into out[0 .. mxint8EncodedBytes(count)). A block holding a NaN or an
// infinity gets scale code 255 (E8M0's NaN) and element codes 0: it reads back as NaN throughout,
// so a non-finite activation stays non-finite on every card rather than becoming a number.
void encodeMxint8(const float* values, std::size_t count, std::byte* out, MxPath path = MxPath::Auto);
void encodeMxint8(const uint16_t* halves, std::size_t count, std::byte* out,  // float16 bits
                  MxPath path = MxPath::Auto);

// Elements [begin, end) of an encoding of `count` elements, dequantized into out[0, end - begin)
// (decode) or added to it elementwise (accumulate, in float).
void decodeMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out,
                  MxPath path = MxPath::Auto);
void accumulateMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out,
                      MxPath path = MxPath::Auto);

}  // namespace qaic::kernels::mx
