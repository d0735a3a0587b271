// SPDX-License-Identifier: Apache-2.0
// The MXFP6 format against a reference written here from the OCP Microscaling v1.0 rules
// (docs/formats/mxfp6.md): element values from the bit fields, scale from floor(log2(amax)),
// round to nearest with ties to even by exhaustive search, saturation, padding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxfp6Format.hpp"

namespace qaic::kernels::mx {
namespace {

// E2M3: bias 1; E3M2: bias 3; exponent field 0 is subnormal (no implicit one).
double referenceValue(ElementFormat format, int code) {
  const int mantissaBits = format == ElementFormat::E2M3 ? 3 : 2, bias = format == ElementFormat::E2M3 ? 1 : 3;
  const int exponent = (code & 31) >> mantissaBits, mantissa = code & ((1 << mantissaBits) - 1);
  const double m = double(mantissa) / (1 << mantissaBits);
  const double magnitude = exponent == 0 ? m * std::pow(2.0, 1 - bias) : (1 + m) * std::pow(2.0, exponent - bias);
  return (code & 32) ? -magnitude : magnitude;
}

// Nearest of the 32 magnitudes by search; a tie goes to the even code.
int referenceEncode(ElementFormat format, double value) {
  int best = 0;
  for (int code = 1; code < 32; ++code) {
    const double distance = std::fabs(std::fabs(value) - referenceValue(format, code));
    const double bestDistance = std::fabs(std::fabs(value) - referenceValue(format, best));
    if (distance < bestDistance || (distance == bestDistance && code % 2 == 0)) best = code;
  }
  return (best != 0 && value < 0) ? best | 32 : best;
}

uint8_t codeAt(std::span<const std::byte> column, int64_t element) {
  const std::byte* group = column.data() + 24 * (element / 32) + 3 * ((element % 32) / 4);
  const uint32_t word = std::to_integer<uint32_t>(group[0]) | std::to_integer<uint32_t>(group[1]) << 8 |
                        std::to_integer<uint32_t>(group[2]) << 16;
  return static_cast<uint8_t>((word >> (6 * (element % 4))) & 63);
}

std::vector<std::byte> encodeAll(const std::vector<float>& w, int64_t k, int64_t n, bool transposed = false,
                                 ElementFormat format = ElementFormat::E2M3) {
  std::vector<std::byte> out(encodedBytes(k, n));
  WeightSource source{std::as_bytes(std::span(w)), ir::DType::Float, k, n, transposed};
  encodeMxfp6Columns(format, source, 0, n, out);
  return out;
}

TEST(Mxfp6Format, AllSixtyFourCodesOfBothEncodings) {
  for (auto format : {ElementFormat::E2M3, ElementFormat::E3M2}) {
    for (int code = 0; code < 64; ++code) {
      EXPECT_EQ(decodeElement(format, static_cast<uint8_t>(code)), referenceValue(format, code)) << code;
    }
  }
  EXPECT_EQ(decodeElement(ElementFormat::E2M3, 31), 7.5f);
  EXPECT_EQ(decodeElement(ElementFormat::E2M3, 1), 0.125f);
  EXPECT_EQ(decodeElement(ElementFormat::E3M2, 31), 28.0f);
  EXPECT_EQ(decodeElement(ElementFormat::E3M2, 1), 0.0625f);
  EXPECT_EQ(elementTraits(ElementFormat::E2M3).emax, 2);
  EXPECT_EQ(elementTraits(ElementFormat::E3M2).emax, 4);
}

TEST(Mxfp6Format, RoundsToNearestTiesToEvenAndSaturates) {
  for (auto format : {ElementFormat::E2M3, ElementFormat::E3M2}) {
    // Every midpoint between neighbours (a tie) and points just around them.
    for (int code = 0; code < 31; ++code) {
      const double mid = (referenceValue(format, code) + referenceValue(format, code + 1)) / 2;
      for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 100.0), -mid}) {
        EXPECT_EQ(encodeElement(format, v), referenceEncode(format, v)) << v;
      }
    }
    const double max = elementTraits(format).maxNormal;
    EXPECT_EQ(encodeElement(format, max * 1.2), 31);
    EXPECT_EQ(encodeElement(format, -max * 100), 63);
    EXPECT_EQ(encodeElement(format, -0.0), 0);  // zero is +0
  }
  // E2M3 in [4, 8) steps by 0.5: 4.25 ties between 4 (code 24) and 4.5 (25): even wins.
  EXPECT_EQ(encodeElement(ElementFormat::E2M3, 4.25), 24);
  EXPECT_EQ(encodeElement(ElementFormat::E2M3, 4.75), 26);
  EXPECT_EQ(encodeElement(ElementFormat::E2M3, 0.0625), 0);  // half of the smallest subnormal: tie to 0
  EXPECT_EQ(encodeElement(ElementFormat::E2M3, 0.1875), 2);  // between 0.125 and 0.25: to 0.25
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> any(-9.0, 9.0);
  for (int i = 0; i < 20000; ++i) {
    const double v = any(rng);
    ASSERT_EQ(encodeElement(ElementFormat::E2M3, v), referenceEncode(ElementFormat::E2M3, v)) << v;
  }
}

// The encoder's fast path (float bit arithmetic) against the reference, through whole blocks:
// every midpoint and its neighbours, scaled into a block whose scale code is 127 (X = 1).
TEST(Mxfp6Format, EncoderRoundsEveryTieAndNeighbourAsTheReference) {
  for (auto format : {ElementFormat::E2M3, ElementFormat::E3M2}) {
    const double max = elementTraits(format).maxNormal;
    std::vector<float> values;
    for (int code = 0; code < 31; ++code) {
      const double mid = (referenceValue(format, code) + referenceValue(format, code + 1)) / 2;
      for (float v : {float(mid), std::nextafter(float(mid), 0.0f), std::nextafter(float(mid), 100.0f)}) {
        values.push_back(v);
        values.push_back(-v);
      }
    }
    values.push_back(float(max * 1.04));  // between max and the next binade: saturates
    // Blocks of 31 values plus one holding the block's amax, so that X = 1.
    const float amaxValue = float(std::ldexp(1.0, elementTraits(format).emax));
    std::vector<float> w;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (w.size() % 32 == 0) w.push_back(amaxValue);
      w.push_back(values[i]);
    }
    while (w.size() % 32 != 0) w.push_back(0.0f);
    const int64_t k = static_cast<int64_t>(w.size());
    const auto bytes = encodeAll(w, k, 1, false, format);
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(std::to_integer<int>(bytes[24 * (k / 32) + i / 32]), 127) << "block " << i / 32;
      EXPECT_EQ(codeAt(bytes, i), referenceEncode(format, w[i])) << "value " << w[i] << " format " << int(format);
    }
  }
}

TEST(Mxfp6Format, ScaleIsFloorLog2OfAmaxMinusEmaxClampedToTheE8M0Range) {
  EXPECT_EQ(blockScaleCode(ElementFormat::E2M3, 1.0f), 127 - 2);
  EXPECT_EQ(blockScaleCode(ElementFormat::E2M3, 7.99f), 127);
  EXPECT_EQ(blockScaleCode(ElementFormat::E3M2, 1.0f), 127 - 4);
  EXPECT_EQ(blockScaleCode(ElementFormat::E2M3, 0.0f), 0);
  EXPECT_EQ(scaleCodeForExponent(ElementFormat::E2M3, -200), 0);   // clamps low
  EXPECT_EQ(scaleCodeForExponent(ElementFormat::E2M3, 300), 254);  // clamps high, never 255
  EXPECT_EQ(scaleCodeForExponent(ElementFormat::E2M3, 127 + 2), 254);
  // The smallest float subnormal: floor(log2) = -149, so the code clamps to 0 (X = 2^-127).
  EXPECT_EQ(blockScaleCode(ElementFormat::E2M3, std::numeric_limits<float>::denorm_min()), 0);
  EXPECT_EQ(scaleValue(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(scaleValue(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(scaleValue(255)));
}

TEST(Mxfp6Format, EncodesABlockByTheRule) {
  // K = 32, N = 1: values 0.1 * i - 1.6 (amax 1.6, floor(log2) 0, scale code 125, X = 0.25).
  std::vector<float> w(32);
  for (int i = 0; i < 32; ++i) w[i] = 0.1f * float(i) - 1.6f;
  const auto bytes = encodeAll(w, 32, 1);
  ASSERT_EQ(bytes.size(), 25u);
  EXPECT_EQ(std::to_integer<int>(bytes[24]), 125);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(codeAt(bytes, i), referenceEncode(ElementFormat::E2M3, double(w[i]) / 0.25));
  std::vector<float> back(32);
  decodeMxfp6Column(ElementFormat::E2M3, bytes, 32, 1, 0, back.data());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(back[i], w[i], 0.0625 + 1e-6) << i;  // half a step of [1, 2)
}

TEST(Mxfp6Format, ZeroBlockIsScaleZeroAndPositiveZeros) {
  std::vector<float> w(64, 0.0f);
  for (int i = 32; i < 64; ++i) w[i] = (i % 2 ? -0.0f : 0.0f);
  const auto bytes = encodeAll(w, 64, 1);
  for (std::byte b : bytes) EXPECT_EQ(std::to_integer<int>(b), 0);
}

TEST(Mxfp6Format, KNotAMultipleOf32PadsTheLastBlockWithZeroCodes) {
  const int64_t k = 100, n = 3;  // 4 blocks, the last holding 4 elements
  std::vector<float> w(k * n);
  for (int64_t i = 0; i < k * n; ++i) w[i] = std::sin(float(i)) * 3.0f;
  const auto bytes = encodeAll(w, k, n);
  ASSERT_EQ(bytes.size(), encodedBytes(k, n));
  EXPECT_EQ(encodedBytes(k, n), 3u * 4u * 25u);
  for (int64_t c = 0; c < n; ++c) {
    const auto column = std::span(bytes).subspan(c * columnBytes(k), columnBytes(k));
    for (int64_t e = k; e < 128; ++e) EXPECT_EQ(codeAt(column, e), 0) << e;
    // The last block's scale comes from its 4 real elements only.
    float amax = 0;
    for (int64_t e = 96; e < k; ++e) amax = std::max(amax, std::fabs(w[e * n + c]));
    EXPECT_EQ(std::to_integer<int>(column[4 * 24 + 3]), std::ilogb(amax) - 2 + 127);
  }
}

TEST(Mxfp6Format, TransposedAndFloat16SourcesAndColumnRangesAgree) {
  const int64_t k = 70, n = 5;
  std::vector<float> w(k * n), wt(k * n);
  std::vector<uint16_t> half(k * n);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const float v = halfToFloat(floatToHalf(std::cos(float(r * n + c)) * 0.01f));  // exact in both
      w[r * n + c] = v;
      wt[c * k + r] = v;
      half[r * n + c] = floatToHalf(v);
    }
  }
  const auto plain = encodeAll(w, k, n);
  EXPECT_EQ(encodeAll(wt, k, n, true), plain);
  std::vector<std::byte> fromHalf(encodedBytes(k, n));
  encodeMxfp6Columns(ElementFormat::E2M3, {std::as_bytes(std::span(half)), ir::DType::Float16, k, n, false}, 0, n,
                     fromHalf);
  EXPECT_EQ(fromHalf, plain);
  // Columns 2..4 alone are the same bytes as in the whole encoding.
  std::vector<std::byte> part(3 * columnBytes(k));
  encodeMxfp6Columns(ElementFormat::E2M3, {std::as_bytes(std::span(w)), ir::DType::Float, k, n, false}, 2, 3, part);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), plain.begin() + 2 * columnBytes(k)));
}

TEST(Mxfp6Format, NaNOrInfiniteWeightIsRefusedNamingTheElement) {
  std::vector<float> w(64, 1.0f);
  w[5 * 2 + 1] = std::numeric_limits<float>::quiet_NaN();
  try {
    encodeAll(w, 32, 2);
    FAIL() << "NaN accepted";
  } catch (const MxFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("element [5, 1] is NaN"), std::string::npos) << e.what();
  }
  w[5 * 2 + 1] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(encodeAll(w, 32, 2), MxFormatError);
  std::vector<std::byte> small(10);
  EXPECT_THROW(encodeMxfp6Columns(ElementFormat::E2M3, {std::as_bytes(std::span(w)), ir::DType::Float, 32, 2, false}, 0,
                                  2, small),
               MxFormatError);
}

}  // namespace
}  // namespace qaic::kernels::mx
