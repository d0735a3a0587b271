// SPDX-License-Identifier: Apache-2.0
// MXFP6 weights (OCP Microscaling Formats v1.0): the 6-bit element codes, the shared E8M0 block
// scale, the quantization rule and the storage layout that qaic-exec -mxfp6-matmul writes and
// the MX kernels (Mxfp6Matmul.hpp) read. docs/formats/mxfp6.md describes it byte by byte.
// Pure functions without oneDNN, so the compiler (and a streaming container writer, a column
// range at a time) and the executor share this one implementation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "ir/Graph.hpp"
#include "kernels/mx/E8m0.hpp"

namespace qaic::kernels::mx {

inline constexpr int64_t kBlockElements = 32;           // elements sharing one scale, along K
inline constexpr int64_t kBlockBytes = 24;              // 32 codes of 6 bits, packed
inline constexpr uint8_t kMaxScaleCode = kE8m0MaxCode;  // 255 is E8M0's NaN; never written

// The FP6 element encodings of the specification. The vendor does not state which one its
// MXFP6 uses; E2M3 (more mantissa) is the default (docs/formats/mxfp6.md).
enum class ElementFormat : uint8_t { E2M3, E3M2 };

struct ElementTraits {
  int exponentBits, mantissaBits, bias;
  int emax;          // largest normal exponent (unbiased)
  double maxNormal;  // largest magnitude
};
ElementTraits elementTraits(ElementFormat format);

// Bad input to the encoder (a NaN or infinite weight, sizes that do not fit); the message names
// the element. The compiler prefixes the constant's name.
class MxFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of a 6-bit code (bit 5 sign, then exponent, then mantissa).
float decodeElement(ElementFormat format, uint8_t code);
// The 32 magnitudes of codes 0..31 (sign clear), increasing: the kernels' lookup table.
std::array<float, 32> magnitudeTable(ElementFormat format);
// `scaled` (already divided by the block scale) rounded to the nearest code, ties to even,
// saturating at +-maxNormal. `scaled` must be finite.
uint8_t encodeElement(ElementFormat format, double scaled);

// 2^(code - 127); code 255 (never written) reads as NaN.
float scaleValue(uint8_t code);
// The scale code for a block whose largest magnitude has binary exponent `amaxExponent`
// (floor(log2(amax))): amaxExponent - emax + 127, clamped to [0, 254].
uint8_t scaleCodeForExponent(ElementFormat format, int amaxExponent);
// The scale code of a block of largest magnitude `amax` (finite); 0 for amax == 0.
uint8_t blockScaleCode(ElementFormat format, float amax);

// Storage: per output column n (0..N-1), in column order, ceil(K/32) blocks of 24 packed bytes
// followed by that column's ceil(K/32) scale codes. Element k of a block is bits [6k, 6k+6) of
// its 24 bytes read as a little-endian bit string; padding elements (K not a multiple of 32)
// are code 0.
inline int64_t blocksPerColumn(int64_t k) { return (k + kBlockElements - 1) / kBlockElements; }
inline int64_t columnBytes(int64_t k) { return blocksPerColumn(k) * (kBlockBytes + 1); }
inline uint64_t encodedBytes(int64_t k, int64_t n) {
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(columnBytes(k));
}

// A weight W[K, N] as the model holds it: float32 or float16, row-major [K, N], or [N, K] when
// `transposed` (Gemm's transB).
struct WeightSource {
  std::span<const std::byte> bytes;
  ir::DType dtype = ir::DType::Float;
  int64_t k = 0, n = 0;
  bool transposed = false;
};

// Columns [firstColumn, firstColumn + columnCount) of `source` encoded into `out`, which must
// hold exactly columnCount * columnBytes(K) bytes (the same bytes those columns occupy in the
// whole encoding, so a writer may encode a constant in chunks). Throws MxFormatError.
void encodeMxfp6Columns(ElementFormat format, const WeightSource& source, int64_t firstColumn, int64_t columnCount,
                        std::span<std::byte> out);

// Column `column` of an encoded W[K, N] dequantized into out[0..K): the reference the kernels
// are tested against, and the plain view for tools.
void decodeMxfp6Column(ElementFormat format, std::span<const std::byte> encoded, int64_t k, int64_t n, int64_t column,
                       float* out);

}  // namespace qaic::kernels::mx
