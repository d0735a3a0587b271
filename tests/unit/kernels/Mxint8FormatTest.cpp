// SPDX-License-Identifier: Apache-2.0
// The MXINT8 format against a reference written here from the OCP Microscaling v1.0 rules
// (docs/formats/mxint8.md): the scale 2^floor(log2(amax)) as an E8M0 code, each element the
// nearest of the codes -127..127 times 2^-6 times the scale (found by search, ties to the even
// code), saturation, zeros, short last blocks, non-finite blocks, float16 input; then every
// compiled path (MxPath) against the scalar functions, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxint8Format.hpp"

namespace qaic::kernels::mx {
namespace {

// The spec's shared exponent: floor(log2(amax)) minus the element type's largest power of two
// (2^0 for INT8), biased by 127 and kept within E8M0's [0, 254].
int referenceScaleCode(const std::vector<double>& block) {
  double amax = 0;
  for (double v : block) amax = std::max(amax, std::fabs(v));
  if (amax == 0) return 0;
  int exponent = 0;
  std::frexp(amax, &exponent);  // amax = m * 2^exponent, m in [0.5, 1)
  return std::clamp(exponent - 1 + 127, 0, 254);
}

// The nearest of code * 2^-6 * scale over every code -127..127 (the encoder never writes
// -128); a tie goes to the even code.
int referenceElement(double value, int scaleCode) {
  const double scale = std::ldexp(1.0, scaleCode - 127);
  int best = 0;
  for (int code = -127; code <= 127; ++code) {
    const double distance = std::fabs(value - code / 64.0 * scale);
    const double bestDistance = std::fabs(value - best / 64.0 * scale);
    if (distance < bestDistance || (distance == bestDistance && code % 2 == 0)) best = code;
  }
  return best;
}

struct Reference {
  std::vector<int8_t> codes;
  std::vector<uint8_t> scales;
};

Reference referenceEncode(const std::vector<float>& values) {
  Reference r;
  for (std::size_t first = 0; first < values.size(); first += 32) {
    std::vector<double> block(values.begin() + static_cast<std::ptrdiff_t>(first),
                              values.begin() + static_cast<std::ptrdiff_t>(std::min(values.size(), first + 32)));
    const int scale = referenceScaleCode(block);
    r.scales.push_back(static_cast<uint8_t>(scale));
    for (double v : block) r.codes.push_back(static_cast<int8_t>(referenceElement(v, scale)));
  }
  return r;
}

std::vector<std::byte> encode(const std::vector<float>& values) {
  std::vector<std::byte> out(mxint8EncodedBytes(values.size()));
  encodeMxint8(values.data(), values.size(), out.data());
  return out;
}

void expectMatchesReference(const std::vector<float>& values) {
  const Reference expected = referenceEncode(values);
  const auto encoded = encode(values);
  ASSERT_EQ(encoded.size(), values.size() + expected.scales.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(static_cast<int8_t>(encoded[i]), expected.codes[i]) << "element " << i << " = " << values[i];
  }
  for (std::size_t b = 0; b < expected.scales.size(); ++b) {
    ASSERT_EQ(std::to_integer<uint8_t>(encoded[values.size() + b]), expected.scales[b]) << "block " << b;
  }
  // Decoding gives code * 2^-6 * scale exactly.
  std::vector<float> decoded(values.size());
  decodeMxint8(encoded.data(), values.size(), 0, values.size(), decoded.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double exact = expected.codes[i] / 64.0 * std::ldexp(1.0, expected.scales[i / 32] - 127);
    ASSERT_EQ(double{decoded[i]}, exact) << "element " << i;
  }
}

TEST(Mxint8Format, EncodesRandomBlocksAsTheReference) {
  std::mt19937 rng(11);
  for (float range : {1e-30f, 1e-3f, 1.0f, 3.0f, 1000.0f, 1e30f}) {
    SCOPED_TRACE(range);
    std::uniform_real_distribution<float> dist(-range, range);
    std::vector<float> values(32 * 40 + 7);  // a short last block too
    for (float& v : values) v = dist(rng);
    expectMatchesReference(values);
  }
}

TEST(Mxint8Format, ScaleIsTheLargestMagnitudesPowerOfTwo) {
  EXPECT_EQ(mxint8ScaleCode(0.0f), 0);
  EXPECT_EQ(mxint8ScaleCode(1.0f), 127);
  EXPECT_EQ(mxint8ScaleCode(1.999f), 127);
  EXPECT_EQ(mxint8ScaleCode(2.0f), 128);
  EXPECT_EQ(mxint8ScaleCode(0.75f), 126);
  EXPECT_EQ(mxint8ScaleCode(std::numeric_limits<float>::max()), 254);
  // Below 2^-127 the scale stays at E8M0's smallest, 2^-127.
  EXPECT_EQ(mxint8ScaleCode(std::ldexp(1.0f, -130)), 0);
  EXPECT_EQ(mxint8ScaleCode(std::numeric_limits<float>::denorm_min()), 0);
}

TEST(Mxint8Format, RoundsToNearestWithTiesToEven) {
  // Scale 1 (amax 1.0): steps of 1/64. 0.5/64 and 1.5/64 are ties; 2.5/64 too.
  std::vector<float> values{1.0f, 0.5f / 64, 1.5f / 64, 2.5f / 64, -0.5f / 64, -1.5f / 64, 0.51f / 64, 0.3f};
  const auto encoded = encode(values);
  const std::vector<int8_t> expected{64, 0, 2, 2, 0, -2, 1, 19};  // 0.3 * 64 = 19.2
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(static_cast<int8_t>(encoded[i]), expected[i]) << i;
  expectMatchesReference(values);
}

TEST(Mxint8Format, SaturatesAtPlusMinus127) {
  // amax 1.999 has scale 1: 1.999 * 64 = 127.9 rounds to 128, beyond the largest code.
  std::vector<float> values{1.999f, -1.999f, 1.99f, -1.0f};
  const auto encoded = encode(values);
  EXPECT_EQ(static_cast<int8_t>(encoded[0]), 127);
  EXPECT_EQ(static_cast<int8_t>(encoded[1]), -127);
  EXPECT_EQ(static_cast<int8_t>(encoded[2]), 127);  // 127.36
  EXPECT_EQ(static_cast<int8_t>(encoded[3]), -64);
  expectMatchesReference(values);
  // The error is under 1/64 of the scale even where it saturates.
  std::vector<float> decoded(values.size());
  decodeMxint8(encoded.data(), values.size(), 0, values.size(), decoded.data());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_LT(std::fabs(decoded[i] - values[i]), 1.0f / 64) << i;
}

TEST(Mxint8Format, ZerosAndTinyValues) {
  std::vector<float> zeros(40, 0.0f);
  zeros[3] = -0.0f;
  const auto encoded = encode(zeros);
  for (std::size_t i = 0; i < zeros.size(); ++i) EXPECT_EQ(static_cast<int8_t>(encoded[i]), 0);
  EXPECT_EQ(std::to_integer<uint8_t>(encoded[40]), 0);
  EXPECT_EQ(std::to_integer<uint8_t>(encoded[41]), 0);
  std::vector<float> decoded(40, 1.0f);
  decodeMxint8(encoded.data(), 40, 0, 40, decoded.data());
  for (float v : decoded) EXPECT_EQ(v, 0.0f);
  // Values near float's smallest (the scale in double): 2^-140 is 2^-13 of the scale 2^-127.
  expectMatchesReference({std::ldexp(1.0f, -130), std::ldexp(-3.0f, -133), std::ldexp(1.0f, -140), 0.0f});
  // Elements far below their block's largest round to zero.
  expectMatchesReference({1.0f, 1e-3f, -7e-3f, 8e-3f, 1e-20f});
}

TEST(Mxint8Format, NonFiniteBlocksReadBackAsNan) {
  std::vector<float> values(64, 0.5f);
  values[5] = std::numeric_limits<float>::infinity();
  values[40] = std::numeric_limits<float>::quiet_NaN();
  const auto encoded = encode(values);
  EXPECT_EQ(std::to_integer<uint8_t>(encoded[64]), 255);
  EXPECT_EQ(std::to_integer<uint8_t>(encoded[65]), 255);
  std::vector<float> decoded(64);
  decodeMxint8(encoded.data(), 64, 0, 64, decoded.data());
  for (float v : decoded) EXPECT_TRUE(std::isnan(v));
  // A block's NaN stays in its block.
  std::vector<float> mixed(64, 0.25f);
  mixed[50] = -std::numeric_limits<float>::infinity();
  const auto mixedEncoded = encode(mixed);
  decodeMxint8(mixedEncoded.data(), 64, 0, 64, decoded.data());
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(decoded[i], 0.25f);
  for (std::size_t i = 32; i < 64; ++i) EXPECT_TRUE(std::isnan(decoded[i]));
}

TEST(Mxint8Format, Float16InputEncodesItsValues) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-60000.0f, 60000.0f);
  std::vector<uint16_t> halves(100);
  std::vector<float> asFloat(100);
  for (std::size_t i = 0; i < halves.size(); ++i) {
    halves[i] = floatToHalf(dist(rng) * (i % 3 == 0 ? 1e-6f : 1.0f));
    asFloat[i] = halfToFloat(halves[i]);
  }
  std::vector<std::byte> fromHalves(mxint8EncodedBytes(100));
  encodeMxint8(halves.data(), halves.size(), fromHalves.data());
  EXPECT_EQ(fromHalves, encode(asFloat));
}

TEST(Mxint8Format, DecodesAndAccumulatesAnyRange) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-5.0f, 5.0f);
  std::vector<float> values(150);
  for (float& v : values) v = dist(rng);
  const auto encoded = encode(values);
  std::vector<float> whole(150);
  decodeMxint8(encoded.data(), 150, 0, 150, whole.data());
  std::vector<float> part(150 - 37);
  decodeMxint8(encoded.data(), 150, 37, 150, part.data());
  for (std::size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], whole[i + 37]);
  std::vector<float> sums(20, 1.0f);
  accumulateMxint8(encoded.data(), 150, 60, 80, sums.data());
  for (std::size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(sums[i], 1.0f + whole[i + 60]);
  EXPECT_EQ(mxint8Value(static_cast<int8_t>(encoded[61]), std::to_integer<uint8_t>(encoded[150 + 1])), whole[61]);
  EXPECT_EQ(mxint8Value(-128, 127), -2.0f);  // decodes, though never written
  EXPECT_TRUE(std::isnan(mxint8Value(1, 255)));
}

// --- Every compiled path against the scalar rule ---------------------------------------------
// mxint8ScaleCode / mxint8ElementCode / mxint8Value are the definition; each path's bytes and
// floats must equal theirs bit for bit, NaN blocks, zero blocks, scales that need double, short
// blocks and unaligned ranges included.

constexpr MxPath kVectorPaths[] = {MxPath::Avx2, MxPath::Avx512};

std::vector<MxPath> pathsThisCpuHas() {
  std::vector<MxPath> paths{MxPath::Auto, MxPath::Scalar};
  for (MxPath path : kVectorPaths)
    if (mxint8PathAvailable(path)) paths.push_back(path);
  return paths;
}

std::vector<std::byte> scalarEncode(const std::vector<float>& values) {
  const std::size_t count = values.size();
  std::vector<std::byte> out(mxint8EncodedBytes(count));
  for (std::size_t first = 0, b = 0; first < count; first += 32, ++b) {
    const std::size_t stop = std::min(count, first + 32);
    float amax = 0;
    bool finite = true;
    for (std::size_t i = first; i < stop; ++i) {
      finite = finite && std::isfinite(values[i]);
      amax = std::max(amax, std::fabs(values[i]));
    }
    const uint8_t scale = finite ? mxint8ScaleCode(amax) : uint8_t{255};
    out[count + b] = static_cast<std::byte>(scale);
    for (std::size_t i = first; i < stop; ++i)
      out[i] = static_cast<std::byte>(finite ? mxint8ElementCode(values[i], scale) : int8_t{0});
  }
  return out;
}

std::vector<uint32_t> bitsOf(const std::vector<float>& values) {
  std::vector<uint32_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<uint32_t>(values[i]);
  return bits;
}

// Every path: encode equals scalarEncode; decode and accumulate over `ranges` equal
// mxint8Value's (accumulating onto `base` in float), bit for bit.
void expectEveryPathMatchesScalar(const std::vector<float>& values,
                                  const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  const std::size_t count = values.size();
  const std::vector<std::byte> expected = scalarEncode(values);
  for (MxPath path : pathsThisCpuHas()) {
    SCOPED_TRACE(std::string("path ") + mxPathName(path) + ", count " + std::to_string(count));
    std::vector<std::byte> encoded(expected.size(), std::byte{0x5A});
    encodeMxint8(values.data(), count, encoded.data(), path);
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      ASSERT_EQ(encoded[i], expected[i]) << (i < count
                                                 ? "element " + std::to_string(i) + " = " + std::to_string(values[i])
                                                 : "scale of block " + std::to_string(i - count));
    }
    for (auto [begin, end] : ranges) {
      SCOPED_TRACE("elements [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
      std::vector<float> reference(end - begin), base(end - begin);
      for (std::size_t i = begin; i < end; ++i) {
        reference[i - begin] = mxint8Value(static_cast<int8_t>(expected[i]),
                                           std::to_integer<uint8_t>(expected[count + i / 32]));
        base[i - begin] = static_cast<float>(i % 13) - 6.5f;
      }
      std::vector<float> decoded(end - begin, 99.0f);
      decodeMxint8(expected.data(), count, begin, end, decoded.data(), path);
      ASSERT_EQ(bitsOf(decoded), bitsOf(reference));
      std::vector<float> sums = base;
      accumulateMxint8(expected.data(), count, begin, end, sums.data(), path);
      for (std::size_t i = 0; i < sums.size(); ++i) base[i] += reference[i];
      ASSERT_EQ(bitsOf(sums), bitsOf(base));
    }
  }
}

std::vector<std::pair<std::size_t, std::size_t>> rangesOf(std::size_t count) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges{{0, count}, {count, count}};
  if (count > 2) ranges.push_back({1, count - 1});
  if (count > 40) ranges.insert(ranges.end(), {{5, 29}, {31, 33}, {32, 64}, {7, count - 3}, {count / 2, count}});
  return ranges;
}

// The blocks the rule treats apart, in a row, then every one of them in a random mix.
std::vector<float> edgeBlocks(std::mt19937& rng) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> values;
  const auto block = [&](auto make) {
    for (int i = 0; i < 32; ++i) values.push_back(make(i));
  };
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  block([](int i) { return i % 2 ? -0.0f : 0.0f; });         // zeros
  block([&](int i) { return i == 7 ? nan : unit(rng); });    // a NaN
  block([&](int i) { return i == 31 ? kInf : unit(rng); });  // +inf
  block([&](int i) { return i == 0 ? -kInf : unit(rng); });  // -inf
  // subnormal amax
  block([&](int) { return unit(rng) * std::numeric_limits<float>::denorm_min() * 1000; });
  // amax the smallest normal
  block([&](int i) { return i == 3 ? std::ldexp(1.0f, -126) : unit(rng) * 1e-39f; });
  // scale codes that need double
  block([&](int) { return unit(rng) * std::ldexp(1.0f, -121); });
  // around kFloatMultiplierMinCode
  block([&](int) { return unit(rng) * std::ldexp(1.0f, -120); });
  block([&](int) { return unit(rng) * std::numeric_limits<float>::max(); });  // the largest scales
  // ties: (2k + 1) / 2 steps
  block([](int i) { return i == 0 ? 1.0f : (2 * i + 1) / 128.0f * (i % 3 ? 1 : -1); });
  // saturation to +-127
  block([](int i) { return (i % 2 ? -1.0f : 1.0f) * (1.9921875f + i * 1e-4f); });
  // amax a power of two
  block([](int i) { return i == 5 ? 4.0f : 0.0f; });
  std::vector<float> mixed = values;
  std::shuffle(mixed.begin(), mixed.end(), rng);
  values.insert(values.end(), mixed.begin(), mixed.end());
  return values;
}

TEST(Mxint8FormatPaths, ThisCpuHasEveryVectorPath) {
  // Loud on a CPU without them: the other tests then check only the paths it has.
  for (MxPath path : kVectorPaths) {
    EXPECT_TRUE(mxint8PathAvailable(path))
        << "this CPU lacks the " << mxPathName(path) << " MXINT8 path: it is not checked here";
    if (!mxint8PathAvailable(path)) {
      std::vector<float> one{1.0f};
      std::vector<std::byte> out(mxint8EncodedBytes(1));
      EXPECT_THROW(encodeMxint8(one.data(), 1, out.data(), path), std::invalid_argument);
    }
  }
  // MxPath is shared with the MXFP6 matmul; MXINT8 has no body of its VBMI path.
  EXPECT_FALSE(mxint8PathAvailable(MxPath::Avx512Vbmi));
  std::vector<float> one{1.0f};
  std::vector<std::byte> out(mxint8EncodedBytes(1));
  EXPECT_THROW(encodeMxint8(one.data(), 1, out.data(), MxPath::Avx512Vbmi), std::invalid_argument);
}

TEST(Mxint8FormatPaths, EdgeBlocksBitExactOnEveryPath) {
  std::mt19937 rng(37);
  const std::vector<float> values = edgeBlocks(rng);
  expectEveryPathMatchesScalar(values, rangesOf(values.size()));
  // The same blocks cut short: every special block as a short last block too.
  for (std::size_t count : {32 * 4 + 9, 32 * 7 + 31, 32 * 12 + 1})
    expectEveryPathMatchesScalar(std::vector<float>(values.begin(), values.begin() + count), rangesOf(count));
}

TEST(Mxint8FormatPaths, RandomValuesBitExactOnEveryPathAndCount) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-149, 127);
  for (std::size_t count : {0, 1, 31, 32, 33, 4096 + 7}) {
    // Each block's magnitude drawn from float's whole range, some elements far below it.
    std::vector<float> values(count);
    for (std::size_t first = 0; first < count; first += 32) {
      const int e = exponent(rng);
      for (std::size_t i = first; i < std::min(count, first + 32); ++i)
        values[i] = std::ldexp(unit(rng), i % 5 == 0 ? std::max(e - 20, -149) : e);
    }
    expectEveryPathMatchesScalar(values, rangesOf(count));
  }
}

TEST(Mxint8FormatPaths, EmptyInputWritesNothing) {
  const std::vector<float> noFloats;
  const std::vector<uint16_t> noHalves;
  std::vector<std::byte> encoded;  // data() may be null: no path may touch it
  std::vector<float> out;
  for (MxPath path : pathsThisCpuHas()) {
    encodeMxint8(noFloats.data(), 0, encoded.data(), path);
    encodeMxint8(noHalves.data(), 0, encoded.data(), path);
    decodeMxint8(encoded.data(), 0, 0, 0, out.data(), path);
    accumulateMxint8(encoded.data(), 0, 0, 0, out.data(), path);
  }
  EXPECT_TRUE(encoded.empty());
}

TEST(Mxint8FormatPaths, EveryFloat16BitPatternOnEveryPath) {
  // All 65536 patterns (NaNs, infinities, subnormals, zeros of both signs), shuffled into blocks
  // of mixed magnitudes, then some counts with a short last block.
  std::vector<uint16_t> halves(65536);
  for (std::size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::mt19937 rng(16);
  std::shuffle(halves.begin(), halves.end(), rng);
  // Finite blocks too: most shuffled blocks hold a NaN or an infinity.
  std::vector<uint16_t> finite;
  for (uint16_t h : halves)
    if ((h & 0x7C00u) != 0x7C00u) finite.push_back(h);
  halves.insert(halves.end(), finite.begin(), finite.end());
  for (std::size_t count : {halves.size(), std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{4096 + 7}}) {
    std::vector<float> asFloat(count);
    for (std::size_t i = 0; i < count; ++i) asFloat[i] = halfToFloat(halves[i]);
    const std::vector<std::byte> expected = scalarEncode(asFloat);
    for (MxPath path : pathsThisCpuHas()) {
      SCOPED_TRACE(std::string("path ") + mxPathName(path) + ", count " + std::to_string(count));
      std::vector<std::byte> encoded(expected.size());
      encodeMxint8(halves.data(), count, encoded.data(), path);
      ASSERT_EQ(encoded, expected);
    }
  }
}

}  // namespace
}  // namespace qaic::kernels::mx
