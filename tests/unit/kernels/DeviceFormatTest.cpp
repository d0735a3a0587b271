// SPDX-License-Identifier: Apache-2.0
// Device formats against a direct implementation of seed 003's offset formulas, for the scalar
// and the vectorized path, many shapes (C = 1, 3, 8, 9, 20; odd W and H), both user layouts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "DeviceBufferValues.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/format/DeviceFormat.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels {
namespace {

using ir::DeviceLayout;
using ir::DType;
using ir::UserLayout;

// Seed 003, literally: (d, w, h, c) -> element offset; x = w, y = h, n = c.
int64_t seedOffset(int64_t D, int64_t W, int64_t H, int64_t C, bool transposed, int64_t d, int64_t x, int64_t y,
                   int64_t n) {
  (void)D;
  const int64_t chunkId = n / 8;
  const int64_t n_ = n % 8;
  const int64_t C_ = (n / 8 < C / 8) ? 8 : C % 8;
  const int64_t inDepth = !transposed ? chunkId * (W * H * 8) + x * (H * C_) + y * C_ + n_
                                      : chunkId * (W * H * 8) + y * (W * C_) + x * C_ + n_;
  return d * (W * H * C) + inDepth;
}

struct Shape {
  int64_t N, C, H, W;
};

std::vector<Shape> shapes() {
  std::vector<Shape> s;
  for (int64_t c : {1, 3, 8, 9, 20})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {7, 9}, {5, 17}, {13, 3}})
      for (int64_t n : {1, 2}) s.push_back({n, c, h, w});
  return s;
}

std::vector<float> testValues(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);  // beyond the half range too
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 5) {
      case 0: v[i] = dist(rng); break;
      case 1: v[i] = dist(rng) * 1e-8f; break;  // half subnormals
      case 2: v[i] = static_cast<float>(static_cast<int>(i % 200) - 100) * 0.125f; break;
      default: v[i] = dist(rng) / 1000.0f; break;
    }
  }
  return v;
}

int64_t userIndex(const Shape& s, UserLayout layout, int64_t n, int64_t c, int64_t h, int64_t w) {
  return layout == UserLayout::NHWC ? ((n * s.H + h) * s.W + w) * s.C + c : ((n * s.C + c) * s.H + h) * s.W + w;
}

// Calls f(n, c, h, w) for every element of `s` until a fatal failure.
template <typename F>
void forEachElement(const Shape& s, F&& f) {
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t h = 0; h < s.H; ++h)
        for (int64_t w = 0; w < s.W; ++w) {
          f(n, c, h, w);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

// Where element (n, c, h, w) of `s` lies in a device buffer of `layout`, by the seed's formula.
int64_t seedDeviceOffset(const Shape& s, DeviceLayout layout, int64_t n, int64_t c, int64_t h, int64_t w) {
  return layout == DeviceLayout::Flat ? ((n * s.C + c) * s.H + h) * s.W + w
                                      : seedOffset(s.N, s.W, s.H, s.C, layout == DeviceLayout::DHWC, n, w, h, c);
}

std::vector<ConversionPath> paths() {
  std::vector<ConversionPath> p{ConversionPath::Scalar};
  if (vectorPathAvailable()) p.push_back(ConversionPath::Vector);
  return p;
}

TEST(KernelsDeviceFormat, OffsetMatchesSeedFormula) {
  for (const Shape& s : shapes()) {
    for (DeviceLayout layout : {DeviceLayout::DWHC, DeviceLayout::DHWC}) {
      const DeviceGeometry g = deviceGeometry({s.N, s.C, s.H, s.W}, layout);
      ASSERT_EQ(g.depth, s.N);
      ASSERT_EQ(g.channels, s.C);
      forEachElement(s, [&](int64_t d, int64_t c, int64_t h, int64_t w) {
        ASSERT_EQ(deviceElementOffset(g, layout, d, w, h, c), seedDeviceOffset(s, layout, d, c, h, w));
      });
    }
  }
}

TEST(KernelsDeviceFormat, PreprocessFloatToHalfAndFloatEveryLayout) {
  uint32_t seed = 1;
  for (const Shape& s : shapes()) {
    const ir::Dims dims{s.N, s.C, s.H, s.W};
    const auto count = static_cast<std::size_t>(s.N * s.C * s.H * s.W);
    const std::vector<float> user = testValues(count, seed++);
    for (UserLayout ul : {UserLayout::NCHW, UserLayout::NHWC}) {
      for (DeviceLayout layout : {DeviceLayout::Flat, DeviceLayout::DWHC, DeviceLayout::DHWC}) {
        for (DType element : {DType::Float16, DType::Float}) {
          for (ConversionPath path : paths()) {
            const ir::DeviceFormat format{layout, element};
            std::vector<std::byte> device(deviceBufferBytes(dims, format));
            ASSERT_EQ(device.size(), count * ir::dtypeSize(element));
            userToDevice({"x", DType::Float, ul, dims}, std::as_bytes(std::span(user)), format, device, path);
            forEachElement(s, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
              const int64_t off = seedDeviceOffset(s, layout, n, c, h, w);
              const float v = user[static_cast<std::size_t>(userIndex(s, ul, n, c, h, w))];
              if (element == DType::Float16) {
                uint16_t got;
                std::memcpy(&got, device.data() + off * 2, 2);
                ASSERT_EQ(got, floatToHalf(v))
                    << "C=" << s.C << " H=" << s.H << " W=" << s.W << " path " << static_cast<int>(path);
              } else {
                float got;
                std::memcpy(&got, device.data() + off * 4, 4);
                ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(v));
              }
            });
          }
        }
      }
    }
  }
}

TEST(KernelsDeviceFormat, PostprocessEveryLayoutAndRoundTrip) {
  uint32_t seed = 100;
  for (const Shape& s : shapes()) {
    const ir::Dims dims{s.N, s.C, s.H, s.W};
    const auto count = static_cast<std::size_t>(s.N * s.C * s.H * s.W);
    for (DeviceLayout layout : {DeviceLayout::Flat, DeviceLayout::DWHC, DeviceLayout::DHWC}) {
      for (DType element : {DType::Float16, DType::Float}) {
        // A device buffer whose element at offset k holds a value derived from k.
        const ir::DeviceFormat format{layout, element};
        const std::vector<float> deviceValues = testValues(count, seed++);
        const std::vector<std::byte> device = testing::deviceBufferHolding(dims, format, deviceValues);
        for (UserLayout ul : {UserLayout::NCHW, UserLayout::NHWC}) {
          for (ConversionPath path : paths()) {
            std::vector<float> user(count, -1.0f);
            deviceToUser(format, device, {"y", DType::Float, ul, dims}, std::as_writable_bytes(std::span(user)), path);
            forEachElement(s, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
              const auto off = static_cast<std::size_t>(seedDeviceOffset(s, layout, n, c, h, w));
              const float expected = element == DType::Float16 ? halfToFloat(floatToHalf(deviceValues[off]))
                                                               : deviceValues[off];
              ASSERT_EQ(std::bit_cast<uint32_t>(user[static_cast<std::size_t>(userIndex(s, ul, n, c, h, w))]),
                        std::bit_cast<uint32_t>(expected));
            });
            // And back: device -> user -> device reproduces the device buffer.
            std::vector<std::byte> again(device.size());
            userToDevice({"y", DType::Float, ul, dims}, std::as_bytes(std::span(user)), format, again, path);
            ASSERT_EQ(again, device);
          }
        }
      }
    }
  }
}

TEST(KernelsDeviceFormat, IntegerAndHalfUserTypes) {
  const ir::Dims dims{1, 9, 3, 5};
  const std::size_t count = 9 * 3 * 5;
  const ir::DeviceFormat format{DeviceLayout::DWHC, DType::Float16};
  std::vector<int16_t> user16(count);
  for (std::size_t i = 0; i < count; ++i) user16[i] = static_cast<int16_t>(static_cast<int>(i) * 37 - 2000);
  std::vector<std::byte> device(deviceBufferBytes(dims, format));
  userToDevice({"i16", DType::Int16, UserLayout::NCHW, dims}, std::as_bytes(std::span(user16)), format, device);
  for (int64_t c = 0; c < 9; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 5; ++w) {
        uint16_t got;
        std::memcpy(&got, device.data() + seedOffset(1, 5, 3, 9, false, 0, w, h, c) * 2, 2);
        ASSERT_EQ(got, floatToHalf(static_cast<float>(user16[static_cast<std::size_t>((c * 3 + h) * 5 + w)])));
      }
  // Back into uint8: values saturate to [0, 255], truncating toward zero.
  std::vector<uint8_t> back(count);
  deviceToUser(format, device, {"u8", DType::UInt8, UserLayout::NCHW, dims}, std::as_writable_bytes(std::span(back)));
  for (std::size_t i = 0; i < count; ++i) {
    const float v = halfToFloat(floatToHalf(static_cast<float>(user16[i])));
    const uint8_t expected = v <= 0 ? 0 : (v >= 255 ? 255 : static_cast<uint8_t>(v));
    ASSERT_EQ(back[i], expected) << i;
  }
  // int64 flat into float: static_cast<float> semantics.
  std::vector<int64_t> big{int64_t{1} << 40, -3, 16777217};
  std::vector<float> flat(3);
  const ir::DeviceFormat flatFloat{DeviceLayout::Flat, DType::Float};
  userToDevice({"i64", DType::Int64, UserLayout::NCHW, {3}}, std::as_bytes(std::span(big)), flatFloat,
               std::as_writable_bytes(std::span(flat)));
  EXPECT_EQ(flat[0], static_cast<float>(big[0]));
  EXPECT_EQ(flat[1], -3.0f);
  EXPECT_EQ(flat[2], static_cast<float>(16777217));
}

// Seed 003's "1D, 2D or 3D arrays with multiple channels": [N, C, L] is [N, C, 1, L], [N, C]
// is [N, C, 1, 1] and [C] is [1, C, 1, 1], converted by the rank-4 code with the seed's offsets.
TEST(KernelsDeviceFormat, LowerRanksUseDocumentedGeometry) {
  const DeviceGeometry g3 = deviceGeometry({2, 20, 7}, DeviceLayout::DWHC);
  EXPECT_EQ(g3.depth, 2);
  EXPECT_EQ(g3.channels, 20);
  EXPECT_EQ(g3.height, 1);
  EXPECT_EQ(g3.width, 7);
  const DeviceGeometry g2 = deviceGeometry({3, 12}, DeviceLayout::DHWC);
  EXPECT_EQ(g2.depth, 3);
  EXPECT_EQ(g2.channels, 12);
  EXPECT_EQ(g2.height, 1);
  EXPECT_EQ(g2.width, 1);
  const DeviceGeometry g1 = deviceGeometry({9}, DeviceLayout::DWHC);
  EXPECT_EQ(g1.depth, 1);
  EXPECT_EQ(g1.channels, 9);
  EXPECT_EQ(g1.height, 1);
  EXPECT_EQ(g1.width, 1);
  // By hand from the seed: 20 channels are chunks 0-7, 8-15, 16-19; (n=1, l=2, c=17) sits after
  // one whole depth slice (7*20), two whole chunks (2*7*8) and two pixels of the last chunk (2*4).
  EXPECT_EQ(deviceElementOffset(g3, DeviceLayout::DWHC, 1, 2, 0, 17), 140 + 112 + 8 + 1);
  EXPECT_THROW(deviceGeometry({1, 2, 3, 4, 5}, DeviceLayout::DWHC), FormatError);
}

TEST(KernelsDeviceFormat, LowerRanksConvertAtTheSeedsOffsets) {
  for (const int64_t C : {1, 5, 8, 20}) {
    // (dims, D, W) per rank; H is 1 for all of them.
    const struct {
      ir::Dims dims;
      int64_t D, W;
    } cases[] = {{{2, C, 7}, 2, 7}, {{3, C}, 3, 1}, {{C}, 1, 1}};
    for (const auto& k : cases) {
      const auto count = static_cast<std::size_t>(k.D * C * k.W);
      std::vector<float> user(count);
      for (std::size_t i = 0; i < count; ++i) user[i] = static_cast<float>(i) + 0.5f;
      for (DeviceLayout layout : {DeviceLayout::DWHC, DeviceLayout::DHWC}) {
        for (ConversionPath path : {ConversionPath::Scalar, ConversionPath::Auto}) {
          SCOPED_TRACE(::testing::Message()
                       << "rank " << k.dims.size() << " C=" << C << " layout "
                       << (layout == DeviceLayout::DWHC ? "DWHC" : "DHWC") << " path " << static_cast<int>(path));
          const DeviceGeometry g = deviceGeometry(k.dims, layout);
          std::vector<float> device(count, -1.0f);
          userToDevice({"r", DType::Float, UserLayout::NCHW, k.dims}, std::as_bytes(std::span(user)),
                       {layout, DType::Float}, std::as_writable_bytes(std::span(device)), path);
          for (int64_t d = 0; d < k.D; ++d)
            for (int64_t c = 0; c < C; ++c)
              for (int64_t w = 0; w < k.W; ++w) {
                const int64_t seed = seedOffset(k.D, k.W, 1, C, layout == DeviceLayout::DHWC, d, w, 0, c);
                ASSERT_EQ(deviceElementOffset(g, layout, d, w, 0, c), seed);
                ASSERT_EQ(device[static_cast<std::size_t>(seed)],
                          user[static_cast<std::size_t>((d * C + c) * k.W + w)]);
              }
          std::vector<float> back(count, -1.0f);
          deviceToUser({layout, DType::Float}, std::as_bytes(std::span(device)),
                       {"r", DType::Float, UserLayout::NCHW, k.dims}, std::as_writable_bytes(std::span(back)), path);
          ASSERT_EQ(back, user);
        }
      }
    }
  }
}

// Token ids beyond float's 24-bit mantissa and boolean masks travel flat and unchanged.
TEST(KernelsDeviceFormat, Int64AndBoolFlatBuffersStayExact) {
  const std::vector<int64_t> ids = {0, 16777217, -5, (int64_t{1} << 53) + 1};
  std::vector<std::byte> device(ids.size() * 8);
  const ir::DeviceFormat int64Flat{DeviceLayout::Flat, DType::Int64};
  userToDevice({"ids", DType::Int64, UserLayout::NCHW, {4}}, std::as_bytes(std::span(ids)), int64Flat, device);
  std::vector<int64_t> back(ids.size());
  deviceToUser(int64Flat, device, {"ids", DType::Int64, UserLayout::NCHW, {4}},
               std::as_writable_bytes(std::span(back)));
  EXPECT_EQ(back, ids);

  const std::vector<uint8_t> mask = {0, 1, 7, 0};
  std::vector<std::byte> bytes(mask.size());
  const ir::DeviceFormat boolFlat{DeviceLayout::Flat, DType::Bool};
  userToDevice({"mask", DType::Bool, UserLayout::NCHW, {2, 2}}, std::as_bytes(std::span(mask)), boolFlat, bytes);
  std::vector<uint8_t> stored(mask.size());
  std::memcpy(stored.data(), bytes.data(), bytes.size());
  EXPECT_EQ(stored, mask);  // any nonzero byte is true; the kernels read it so
}

TEST(KernelsDeviceFormat, ErrorsNameTheBuffer) {
  std::vector<float> user(24);
  std::vector<std::byte> device(10);
  const ir::DeviceFormat format{DeviceLayout::DWHC, DType::Float16};
  try {
    userToDevice({"image", DType::Float, UserLayout::NCHW, {1, 2, 3, 4}}, std::as_bytes(std::span(user)), format,
                 device);
    FAIL() << "no error for a short device buffer";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 'image'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("48"), std::string::npos) << e.what();
  }
  std::vector<std::byte> big(1000);
  EXPECT_THROW(userToDevice({"image", DType::Float, UserLayout::NCHW, {1, 2, 3, 4}},
                            std::as_bytes(std::span(user)).first(20), format, big),
               FormatError);
  EXPECT_THROW(userToDevice({"d", DType::Double, UserLayout::NCHW, {4}}, std::as_bytes(std::span(user)), format, big),
               FormatError);
  EXPECT_THROW(userToDevice({"r5", DType::Float, UserLayout::NCHW, {1, 1, 1, 2, 3}}, std::as_bytes(std::span(user)),
                            format, big),
               FormatError);
  EXPECT_THROW(
      userToDevice({"nhwc3", DType::Float, UserLayout::NHWC, {2, 3, 4}}, std::as_bytes(std::span(user)), format, big),
      FormatError);
  EXPECT_THROW(deviceToUser(format, std::span(device).first(4), {"out", DType::Float, UserLayout::NCHW, {1, 2, 3, 4}},
                            std::as_writable_bytes(std::span(user))),
               FormatError);
  if (!vectorPathAvailable()) {
    EXPECT_THROW(userToDevice({"v", DType::Float, UserLayout::NCHW, {1, 2, 3, 4}}, std::as_bytes(std::span(user)),
                              format, big, ConversionPath::Vector),
                 FormatError);
  }
}

TEST(KernelsHalf, KnownConversions) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // rounds up to infinity
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie to even
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even (down)
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie to even (up)
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7C00);
  EXPECT_EQ(floatToHalf(std::nanf("")), 0x7E00);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
}

TEST(KernelsHalf, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto half = static_cast<uint16_t>(h);
    if ((half & 0x7C00) == 0x7C00 && (half & 0x3FF)) continue;  // NaNs: checked above
    ASSERT_EQ(floatToHalf(halfToFloat(half)), half) << std::hex << h;
  }
}

TEST(KernelsHalf, ScalarMatchesVectorOnRandomBitPatterns) {
  std::mt19937 rng(7);
  std::vector<uint32_t> bits(1 << 18);
  for (auto& b : bits) b = rng();
  const ir::Dims dims{static_cast<int64_t>(bits.size())};
  const ir::DeviceFormat format{DeviceLayout::Flat, DType::Float16};
  std::vector<std::byte> scalar(bits.size() * 2), vector(bits.size() * 2);
  userToDevice({"bits", DType::Float, UserLayout::NCHW, dims}, std::as_bytes(std::span(bits)), format, scalar,
               ConversionPath::Scalar);
  userToDevice({"bits", DType::Float, UserLayout::NCHW, dims}, std::as_bytes(std::span(bits)), format, vector,
               ConversionPath::Auto);
  EXPECT_EQ(scalar, vector);
}

}  // namespace
}  // namespace qaic::kernels
