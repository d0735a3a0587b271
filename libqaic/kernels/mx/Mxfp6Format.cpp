// SPDX-License-Identifier: Apache-2.0
#include "kernels/mx/Mxfp6Format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/format/Half.hpp"

namespace qaic::kernels::mx {
namespace {

// The 31 midpoints between consecutive magnitudes, for rounding by search: exact in double, so
// a value equal to one is a true tie.
struct Rounding {
  std::array<float, 32> magnitudes;
  std::array<double, 31> midpoints;
};

Rounding makeRounding(ElementFormat format) {
  Rounding r{magnitudeTable(format), {}};
  for (std::size_t i = 0; i < r.midpoints.size(); ++i) {
    r.midpoints[i] = (double{r.magnitudes[i]} + double{r.magnitudes[i + 1]}) / 2;
  }
  return r;
}

const Rounding& rounding(ElementFormat format) {
  static const Rounding e2m3 = makeRounding(ElementFormat::E2M3);
  static const Rounding e3m2 = makeRounding(ElementFormat::E3M2);
  return format == ElementFormat::E2M3 ? e2m3 : e3m2;
}

float readSource(const WeightSource& s, int64_t k, int64_t n) {
  const int64_t index = s.transposed ? n * s.k + k : k * s.n + n;
  if (s.dtype == ir::DType::Float16) {
    uint16_t bits;
    std::memcpy(&bits, s.bytes.data() + index * 2, 2);
    return halfToFloat(bits);
  }
  float value;
  std::memcpy(&value, s.bytes.data() + index * 4, 4);  // model weights may be unaligned
  return value;
}

void packBlock(const uint8_t (&codes)[kBlockElements], std::byte* out) {
  for (int group = 0; group < kBlockElements / 4; ++group) {
    const uint32_t word = uint32_t{codes[4 * group]} | uint32_t{codes[4 * group + 1]} << 6 |
                          uint32_t{codes[4 * group + 2]} << 12 | uint32_t{codes[4 * group + 3]} << 18;
    out[3 * group] = static_cast<std::byte>(word & 0xFF);
    out[3 * group + 1] = static_cast<std::byte>((word >> 8) & 0xFF);
    out[3 * group + 2] = static_cast<std::byte>(word >> 16);
  }
}

uint8_t unpackCode(const std::byte* block, int64_t element) {
  const int64_t group = element / 4, shift = 6 * (element % 4);
  const uint32_t word = std::to_integer<uint32_t>(block[3 * group]) |
                        std::to_integer<uint32_t>(block[3 * group + 1]) << 8 |
                        std::to_integer<uint32_t>(block[3 * group + 2]) << 16;
  return static_cast<uint8_t>((word >> shift) & 63);
}

// encodeElement for a float `scaled` = value / X (exact: X is a power of two), by float bit
// arithmetic instead of a search: the encoder's inner loop. Agrees with encodeElement (tested).
uint8_t encodeScaled(const ElementTraits& t, float scaled) {
  uint32_t bits;
  std::memcpy(&bits, &scaled, sizeof bits);
  const uint8_t sign = (bits >> 31) ? 32 : 0;
  bits &= 0x7FFFFFFFu;
  float a;
  std::memcpy(&a, &bits, sizeof a);
  if (a >= static_cast<float>(t.maxNormal)) return sign | 31;
  uint32_t magnitude;
  const float minNormal = std::ldexp(1.0f, 1 - t.bias);
  if (a < minNormal) {
    // Subnormal steps of 2^(1 - bias - m): the count of steps, to nearest even (the default
    // rounding mode); 2^m steps is the smallest normal, whose code is also 2^m.
    magnitude = static_cast<uint32_t>(std::nearbyint(a * std::ldexp(1.0f, t.bias - 1 + t.mantissaBits)));
  } else {
    // The float's mantissa rounded to m bits, to nearest even; a carry moves into the exponent.
    const int dropped = 23 - t.mantissaBits;
    bits += (1u << (dropped - 1)) - 1 + ((bits >> dropped) & 1);
    const int exponent = static_cast<int>(bits >> 23) - 127 + t.bias;
    if (exponent > (1 << t.exponentBits) - 1) return sign | 31;
    magnitude = static_cast<uint32_t>(exponent) << t.mantissaBits | ((bits >> dropped) & ((1u << t.mantissaBits) - 1));
  }
  if (magnitude > 31) magnitude = 31;
  return magnitude == 0 ? 0 : static_cast<uint8_t>(sign | magnitude);
}

// One column's values (K of them) encoded into its columnBytes(K) bytes.
void encodeColumn(ElementFormat format, const float* values, int64_t k, int64_t column, std::byte* out) {
  const int64_t blocks = blocksPerColumn(k);
  std::byte* scales = out + blocks * kBlockBytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * kBlockElements, count = std::min(kBlockElements, k - first);
    float amax = 0;
    for (int64_t i = 0; i < count; ++i) {
      const float v = values[first + i];
      if (!std::isfinite(v)) {
        throw MxFormatError("element [" + std::to_string(first + i) + ", " + std::to_string(column) + "] is " +
                            (std::isnan(v) ? "NaN" : "infinite"));
      }
      amax = std::max(amax, std::fabs(v));
    }
    const uint8_t scale = blockScaleCode(format, amax);
    scales[b] = static_cast<std::byte>(scale);
    // value / X in float: exact (X a power of two) unless it falls below float's normal range,
    // far below the smallest FP6 step, where it rounds to +0 all the same.
    const float inverse = std::ldexp(1.0f, 127 - int{scale});
    const ElementTraits traits = elementTraits(format);
    uint8_t codes[kBlockElements] = {};
    if (amax != 0) {
      for (int64_t i = 0; i < count; ++i) codes[i] = encodeScaled(traits, values[first + i] * inverse);
    }
    packBlock(codes, out + b * kBlockBytes);
  }
}

}  // namespace

ElementTraits elementTraits(ElementFormat format) {
  if (format == ElementFormat::E2M3) return {2, 3, 1, 2, 7.5};
  return {3, 2, 3, 4, 28.0};
}

float decodeElement(ElementFormat format, uint8_t code) {
  const ElementTraits t = elementTraits(format);
  const int magnitude = code & 31;
  const int exponent = magnitude >> t.mantissaBits, mantissa = magnitude & ((1 << t.mantissaBits) - 1);
  const double fraction = std::ldexp(double(mantissa), -t.mantissaBits);
  const double value = exponent == 0 ? std::ldexp(fraction, 1 - t.bias) : std::ldexp(1.0 + fraction, exponent - t.bias);
  return static_cast<float>((code & 32) ? -value : value);
}

std::array<float, 32> magnitudeTable(ElementFormat format) {
  std::array<float, 32> table{};
  for (uint8_t code = 0; code < 32; ++code) table[code] = decodeElement(format, code);
  return table;
}

uint8_t encodeElement(ElementFormat format, double scaled) {
  const Rounding& r = rounding(format);
  const double a = std::fabs(scaled);
  uint8_t magnitude = 31;  // saturate at the largest normal
  if (a < double{r.magnitudes[31]}) {
    const auto above = std::upper_bound(r.midpoints.begin(), r.midpoints.end(), a) - r.midpoints.begin();
    magnitude = static_cast<uint8_t>(above);
    if (above > 0 && a == r.midpoints[above - 1] && (magnitude & 1) != 0) --magnitude;  // tie: the even code
  }
  // Zero is always +0: a block reads back the same whichever sign a rounded-away value had.
  return (magnitude != 0 && std::signbit(scaled)) ? static_cast<uint8_t>(magnitude | 32) : magnitude;
}

float scaleValue(uint8_t code) { return e8m0Value(code); }

uint8_t scaleCodeForExponent(ElementFormat format, int amaxExponent) {
  return e8m0Code(amaxExponent - elementTraits(format).emax);
}

uint8_t blockScaleCode(ElementFormat format, float amax) {
  if (amax == 0) return 0;
  return scaleCodeForExponent(format, std::ilogb(amax));
}

void encodeMxfp6Columns(ElementFormat format, const WeightSource& source, int64_t firstColumn, int64_t columnCount,
                        std::span<std::byte> out) {
  if (source.dtype != ir::DType::Float && source.dtype != ir::DType::Float16)
    throw MxFormatError("source dtype " + std::string(ir::dtypeName(source.dtype)) + " is not float32 or float16");
  if (source.k <= 0 || source.n <= 0) throw MxFormatError("K and N must be positive");
  const uint64_t sourceBytes = static_cast<uint64_t>(source.k) * static_cast<uint64_t>(source.n) *
                               ir::dtypeSize(source.dtype);
  if (source.bytes.size() != sourceBytes) {
    throw MxFormatError("source holds " + std::to_string(source.bytes.size()) + " bytes, [K, N] needs " +
                        std::to_string(sourceBytes));
  }
  if (firstColumn < 0 || columnCount < 0 || firstColumn + columnCount > source.n)
    throw MxFormatError("columns [" + std::to_string(firstColumn) + ", " + std::to_string(firstColumn + columnCount) +
                        ") are outside N = " + std::to_string(source.n));
  const auto perColumn = static_cast<uint64_t>(columnBytes(source.k));
  if (out.size() != static_cast<uint64_t>(columnCount) * perColumn)
    throw MxFormatError("output holds " + std::to_string(out.size()) + " bytes, the columns need " +
                        std::to_string(static_cast<uint64_t>(columnCount) * perColumn));
  // Columns gathered a tile at a time: from a [K, N] source each row of the tile is one read of
  // adjacent elements rather than one cache line per element.
  constexpr int64_t kTile = 16;
  std::vector<float> tile(static_cast<std::size_t>(source.k * kTile));
  for (int64_t begin = 0; begin < columnCount; begin += kTile) {
    const int64_t width = std::min(kTile, columnCount - begin);
    for (int64_t k = 0; k < source.k; ++k) {
      for (int64_t c = 0; c < width; ++c) tile[c * source.k + k] = readSource(source, k, firstColumn + begin + c);
    }
    for (int64_t c = 0; c < width; ++c) {
      encodeColumn(format, tile.data() + c * source.k, source.k, firstColumn + begin + c,
                   out.data() + (begin + c) * perColumn);
    }
  }
}

void decodeMxfp6Column(ElementFormat format, std::span<const std::byte> encoded, int64_t k, int64_t n, int64_t column,
                       float* out) {
  if (encoded.size() != encodedBytes(k, n) || column < 0 || column >= n)
    throw MxFormatError("encoded weight of " + std::to_string(encoded.size()) + " bytes does not hold column " +
                        std::to_string(column) + " of [" + std::to_string(k) + ", " + std::to_string(n) + "]");
  const int64_t blocks = blocksPerColumn(k);
  const std::byte* base = encoded.data() + column * columnBytes(k);
  for (int64_t b = 0; b < blocks; ++b) {
    const float scale = scaleValue(std::to_integer<uint8_t>(base[blocks * kBlockBytes + b]));
    for (int64_t i = 0; i < kBlockElements && b * kBlockElements + i < k; ++i) {
      out[b * kBlockElements + i] = decodeElement(format, unpackCode(base + b * kBlockBytes, i)) * scale;
    }
  }
}

}  // namespace qaic::kernels::mx
