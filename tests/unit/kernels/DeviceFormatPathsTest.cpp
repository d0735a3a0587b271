// SPDX-License-Identifier: Apache-2.0
// The vectorized device-format kernels (whole tiles, shuffled rows, the general tile at edges)
// against the scalar walk, bit for bit, on the sizes where they change strategy: C = 1..9 and
// chunked channel counts, H = 1 and around the 8- and 16-row tiles, W around the 8 / 16-pixel
// steps. Every case runs for each vector kernel family (vectorPaths()).
// Output buffers carry guard bytes that must stay untouched, and start filled with a pattern
// no conversion produces, so an element a kernel forgets to write shows up as a mismatch.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "DeviceBufferValues.hpp"
#include "kernels/format/DeviceFormat.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels {
namespace {

using ir::DeviceLayout;
using ir::DType;
using ir::UserLayout;

constexpr std::size_t kGuard = 64;
constexpr std::byte kFill{0xFF};  // all-ones: a NaN as float and float16, never a converted input

struct Case {
  int64_t N, C, H, W;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int64_t c = 1; c <= 9; ++c)
    for (int64_t h : {1, 2, 7, 8, 9, 17})
      for (int64_t w : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33}) v.push_back({1, c, h, w});
  for (int64_t c : {1, 3, 4, 5, 8})
    for (int64_t h : {15, 16, 31, 33})
      for (int64_t w : {8, 16, 24, 47}) v.push_back({1, c, h, w});
  for (int64_t c : {12, 16, 20, 23})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 17}, {8, 16}, {9, 23}, {16, 40}}) v.push_back({2, c, h, w});
  v.push_back({3, 3, 24, 40});
  // H and W multiples of 8, not both of 16: the AVX-512 kernel's 8 x 8 tiles (two per vector for
  // chunks of 2 or 4 channels) with a chunk of 8 before the last one.
  for (int64_t c : {2, 4, 10, 12, 20})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{24, 24}, {40, 16}, {16, 56}, {56, 40}}) v.push_back({2, c, h, w});
  return v;
}

// Finite values across the float16 range and beyond it (overflow to infinity), half subnormals
// and exact ties, so rounding differences would show.
std::vector<float> userValues(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> wide(-70000.0f, 70000.0f);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: v[i] = wide(rng); break;
      case 1: v[i] = wide(rng) * 1e-9f; break;
      case 2: v[i] = 1.0f + static_cast<float>(i % 64) * (1.0f / 2048.0f); break;  // ties at 2^-11 steps
      default: v[i] = wide(rng) / 4096.0f; break;
    }
  }
  return v;
}

std::vector<std::byte> guarded(std::size_t bytes) { return std::vector<std::byte>(bytes + kGuard, kFill); }

// The vector path's output equals the scalar path's in its first `bytes`, and left the guard
// bytes after them alone.
::testing::AssertionResult matchesScalar(const std::vector<std::byte>& vector, const std::vector<std::byte>& scalar,
                                         std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    if (vector[i] != scalar[i]) return ::testing::AssertionFailure() << "byte " << i << " differs from the scalar path";
  }
  for (std::size_t i = bytes; i < bytes + kGuard; ++i) {
    if (vector[i] != kFill) return ::testing::AssertionFailure() << "guard byte " << i - bytes << " was written";
  }
  return ::testing::AssertionSuccess();
}

std::string describe(const Case& c, DeviceLayout layout, DType element, UserLayout user) {
  return "N=" + std::to_string(c.N) + " C=" + std::to_string(c.C) + " H=" + std::to_string(c.H) +
         " W=" + std::to_string(c.W) + " layout=" + std::to_string(static_cast<int>(layout)) +
         " element=" + std::string(ir::dtypeName(element)) + " user=" + std::to_string(static_cast<int>(user));
}

// The vector paths compared with the scalar walk: the AVX2 kernels forced, and the AVX-512
// kernels forced when the CPU has AVX-512 (this build machine and CI do). On a CPU without
// AVX-512 the second entry is Auto instead, which must then run the AVX2 kernels bit-exactly
// (and forcing Avx512 must be refused, asserted in Avx512PathIsRefusedOrRuns): the test never
// silently compares less. Vector (the product's choice, per case) runs as well.
struct VectorPath {
  ConversionPath path;
  const char* name;
};

std::vector<VectorPath> vectorPaths() {
  std::vector<VectorPath> paths{{ConversionPath::Avx2, "Avx2"}, {ConversionPath::Vector, "Vector"}};
  if (avx512PathAvailable()) {
    paths.push_back({ConversionPath::Avx512, "Avx512"});
  } else {
    paths.push_back({ConversionPath::Auto, "Auto (falls back to AVX2)"});
  }
  return paths;
}

class KernelsDeviceFormatPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!vectorPathAvailable()) GTEST_FAIL() << "this CPU lacks F16C/AVX2: the vector path cannot be compared";
  }
};

TEST_F(KernelsDeviceFormatPaths, Avx512PathIsRefusedOrRuns) {
  const ir::Dims dims{1, 8, 16, 16};
  const std::vector<float> user = userValues(8 * 16 * 16, 5);
  const ir::DeviceFormat format{DeviceLayout::DWHC, DType::Float};
  std::vector<std::byte> device(deviceBufferBytes(dims, format)), scalar(device.size());
  const UserBufferView view{"x", DType::Float, UserLayout::NCHW, dims};
  userToDevice(view, std::as_bytes(std::span(user)), format, scalar, ConversionPath::Scalar);
  if (avx512PathAvailable()) {
    userToDevice(view, std::as_bytes(std::span(user)), format, device, ConversionPath::Avx512);
    EXPECT_EQ(device, scalar);
  } else {
    EXPECT_THROW(userToDevice(view, std::as_bytes(std::span(user)), format, device, ConversionPath::Avx512),
                 FormatError);
  }
}

TEST_F(KernelsDeviceFormatPaths, PreprocessVectorMatchesScalar) {
  uint32_t seed = 1;
  int compared = 0;
  for (const Case& c : cases()) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> user = userValues(count, seed++);
    const auto userBytes = std::as_bytes(std::span(user));
    for (UserLayout ul : {UserLayout::NCHW, UserLayout::NHWC}) {
      for (DeviceLayout layout : {DeviceLayout::DWHC, DeviceLayout::DHWC, DeviceLayout::Flat}) {
        for (DType element : {DType::Float16, DType::Float}) {
          const ir::DeviceFormat format{layout, element};
          const std::size_t bytes = deviceBufferBytes(dims, format);
          auto scalar = guarded(bytes);
          const UserBufferView view{"x", DType::Float, ul, dims};
          userToDevice(view, userBytes, format, std::span(scalar).first(bytes), ConversionPath::Scalar);
          for (const VectorPath& p : vectorPaths()) {
            auto vector = guarded(bytes);
            userToDevice(view, userBytes, format, std::span(vector).first(bytes), p.path);
            ASSERT_TRUE(matchesScalar(vector, scalar, bytes)) << p.name << " " << describe(c, layout, element, ul);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 3000 * 3);
}

TEST_F(KernelsDeviceFormatPaths, PostprocessVectorMatchesScalar) {
  uint32_t seed = 1000;
  int compared = 0;
  for (const Case& c : cases()) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> values = userValues(count, seed++);
    for (DeviceLayout layout : {DeviceLayout::DWHC, DeviceLayout::DHWC, DeviceLayout::Flat}) {
      for (DType element : {DType::Float16, DType::Float}) {
        // Any device content: element k is derived from values[k] (finite, or infinity for half).
        const ir::DeviceFormat format{layout, element};
        const std::vector<std::byte> device = testing::deviceBufferHolding(dims, format, values);
        const std::vector<std::byte> deviceBefore = device;
        for (UserLayout ul : {UserLayout::NCHW, UserLayout::NHWC}) {
          const std::size_t bytes = count * sizeof(float);
          auto scalar = guarded(bytes);
          const UserBufferView view{"y", DType::Float, ul, dims};
          deviceToUser(format, device, view, std::span(scalar).first(bytes), ConversionPath::Scalar);
          for (const VectorPath& p : vectorPaths()) {
            auto vector = guarded(bytes);
            deviceToUser(format, device, view, std::span(vector).first(bytes), p.path);
            ASSERT_TRUE(matchesScalar(vector, scalar, bytes)) << p.name << " " << describe(c, layout, element, ul);
            ASSERT_EQ(device, deviceBefore)
                << p.name << ": the device buffer was written: " << describe(c, layout, element, ul);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 3000 * 3);
}

// The benchmark's shapes (whole tiles, no edges at all), one with every edge at once, and two
// over 8 MB, where wide chunks are walked group by group and narrow chunks read into user rows
// tile column by tile column across many bands (DwhcTiles.cpp, DwhcTilesAvx512.cpp; C = 11 is a
// chunk of 8 and one of 3, H = 2061 takes several blocks of bands and leaves rows and columns to
// the edge tiles).
TEST_F(KernelsDeviceFormatPaths, LargeShapesMatchScalar) {
  for (const Case& c : {Case{1, 3, 224, 224}, Case{1, 8, 112, 112}, Case{1, 20, 56, 56}, Case{2, 11, 61, 45},
                        Case{1, 8, 521, 515}, Case{1, 11, 2061, 103}}) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> user = userValues(count, 77);
    for (DeviceLayout layout : {DeviceLayout::DWHC, DeviceLayout::DHWC}) {
      for (DType element : {DType::Float16, DType::Float}) {
        const ir::DeviceFormat format{layout, element};
        const std::size_t bytes = deviceBufferBytes(dims, format);
        std::vector<std::byte> scalar(bytes);
        const UserBufferView view{"big", DType::Float, UserLayout::NCHW, dims};
        userToDevice(view, std::as_bytes(std::span(user)), format, scalar, ConversionPath::Scalar);
        std::vector<float> backScalar(count, -1.0f);
        deviceToUser(format, scalar, view, std::as_writable_bytes(std::span(backScalar)), ConversionPath::Scalar);
        for (const VectorPath& p : vectorPaths()) {
          std::vector<std::byte> vector(bytes);
          userToDevice(view, std::as_bytes(std::span(user)), format, vector, p.path);
          ASSERT_EQ(vector, scalar) << p.name << " " << describe(c, layout, element, UserLayout::NCHW);
          std::vector<float> back(count, -1.0f);
          deviceToUser(format, vector, view, std::as_writable_bytes(std::span(back)), p.path);
          ASSERT_EQ(0, std::memcmp(back.data(), backScalar.data(), count * sizeof(float)))
              << p.name << " " << describe(c, layout, element, UserLayout::NCHW);
        }
      }
    }
  }
}

// Postprocess with path p into a user buffer `offset` bytes past a cache line, between guard
// bytes: it must hold `expected`, and the bytes before and after it must stay untouched.
void expectPostprocessAtLineOffset(const ir::DeviceFormat& format, std::span<const std::byte> device,
                                   const UserBufferView& view, std::span<const std::byte> expected, std::size_t offset,
                                   const VectorPath& p, const std::string& shape) {
  const std::size_t bytes = expected.size();
  std::vector<std::byte> storage(bytes + 2 * kGuard + 64, kFill);
  const auto misalignment = reinterpret_cast<uintptr_t>(storage.data() + kGuard) % 64;
  const std::size_t start = kGuard + (misalignment == 0 ? 0 : 64 - misalignment) + offset;
  deviceToUser(format, device, view, std::span(storage).subspan(start, bytes), p.path);
  const std::string what = std::string(p.name) + " offset " + std::to_string(offset) + " " + shape;
  ASSERT_EQ(0, std::memcmp(storage.data() + start, expected.data(), bytes)) << what;
  for (std::size_t i = 0; i < start; ++i) ASSERT_EQ(storage[i], kFill) << what << ": byte " << i << " before";
  for (std::size_t i = start + bytes; i < storage.size(); ++i) ASSERT_EQ(storage[i], kFill) << what << ": after";
}

// Postprocess into user buffers that start on a cache line and 16, 32 bytes past one: on a line,
// chunks of 8 and of 4 with W = 16n + 8 and H even are written line by line (rowPairLines8 /
// rowPairLines4 in DwhcTilesAvx512.cpp), elsewhere by wideTiles. The bytes before and after the
// buffer stay untouched.
TEST_F(KernelsDeviceFormatPaths, PostprocessAtLineOffsetsMatchesScalar) {
  int compared = 0;
  for (const Case& c :
       {Case{1, 20, 56, 56}, Case{2, 12, 24, 24}, Case{1, 8, 10, 40}, Case{1, 4, 2, 24}, Case{1, 16, 8, 8}}) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> values = userValues(count, 4242);
    const std::size_t bytes = count * sizeof(float);
    for (DType element : {DType::Float16, DType::Float}) {
      const ir::DeviceFormat format{DeviceLayout::DWHC, element};
      std::vector<std::byte> device(deviceBufferBytes(dims, format));
      const UserBufferView view{"y", DType::Float, UserLayout::NCHW, dims};
      userToDevice(view, std::as_bytes(std::span(values)), format, device, ConversionPath::Scalar);
      auto scalar = guarded(bytes);
      deviceToUser(format, device, view, std::span(scalar).first(bytes), ConversionPath::Scalar);
      for (std::size_t offset : {0, 16, 32}) {
        for (const VectorPath& p : vectorPaths()) {
          ASSERT_NO_FATAL_FAILURE(
              expectPostprocessAtLineOffset(format, device, view, std::span(scalar).first(bytes), offset, p,
                                            describe(c, DeviceLayout::DWHC, element, UserLayout::NCHW)));
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 5 * 2 * 3 * static_cast<int>(vectorPaths().size()));
}

// The sweeps (DwhcSweepsAvx512.cpp, and wideTiles) unroll a row of tiles across the width: every
// unrolled width from one to eight steps, the loop beyond it (nine), and several sweep blocks per
// row (W = 277: 17 whole tiles as 6 + 6 + 5, then an edge of five columns). H = 16 and 18 take the
// 16 x 16 tiles (18 with a bottom edge), H = 24 the 8 x 8 pairs; W = 16n + 8 with even H reads a
// chunk of 8 and one of 4 (C = 12) line by line into a user buffer on a cache line, and by
// wideTiles 16 bytes past one; C = 3 takes the tiles at every width. Both directions against the
// scalar walk, the bytes around the user buffer untouched.
TEST_F(KernelsDeviceFormatPaths, SweepsAtEveryUnrolledWidthMatchScalar) {
  std::vector<Case> shapes;
  for (int64_t n = 1; n <= 9; ++n) {
    for (int64_t w : {16 * n, 16 * n + 8}) {
      for (int64_t h : {16, 18, 24}) {
        for (int64_t c : {12, 3}) shapes.push_back({1, c, h, w});
      }
    }
  }
  for (int64_t h : {16, 18}) shapes.push_back({1, 12, h, 277});
  int compared = 0;
  uint32_t seed = 9000;
  for (const Case& c : shapes) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> values = userValues(count, seed++);
    const std::size_t bytes = count * sizeof(float);
    const UserBufferView view{"sweep", DType::Float, UserLayout::NCHW, dims};
    for (DType element : {DType::Float16, DType::Float}) {
      const ir::DeviceFormat format{DeviceLayout::DWHC, element};
      const std::string shape = describe(c, DeviceLayout::DWHC, element, UserLayout::NCHW);
      std::vector<std::byte> device(deviceBufferBytes(dims, format));
      userToDevice(view, std::as_bytes(std::span(values)), format, device, ConversionPath::Scalar);
      std::vector<std::byte> scalar(bytes);
      deviceToUser(format, device, view, scalar, ConversionPath::Scalar);
      for (const VectorPath& p : vectorPaths()) {
        auto vector = guarded(device.size());
        userToDevice(view, std::as_bytes(std::span(values)), format, std::span(vector).first(device.size()), p.path);
        ASSERT_EQ(0, std::memcmp(vector.data(), device.data(), device.size())) << p.name << " preprocess " << shape;
        for (std::size_t i = 0; i < kGuard; ++i) ASSERT_EQ(vector[device.size() + i], kFill) << p.name << " " << shape;
        for (std::size_t offset : {0, 16}) {
          ASSERT_NO_FATAL_FAILURE(expectPostprocessAtLineOffset(format, device, view, scalar, offset, p, shape));
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, static_cast<int>(shapes.size()) * 2 * static_cast<int>(vectorPaths().size()));
}

// Over 8 MB with W a multiple of 16, into a user buffer on a cache line: the AVX-512 kernel
// writes the whole tiles' user rows with non-temporal stores, and the bottom rows (H % 16 = 10)
// with the masked edge tiles. 16 bytes past a line the same tiles take ordinary stores. C = 11 is
// a chunk of 8 and one of 3. The bytes around the buffer stay untouched.
TEST_F(KernelsDeviceFormatPaths, PostprocessFromDramIntoAlignedRowsMatchesScalar) {
  const Case c{1, 11, 250, 784};
  const ir::Dims dims{c.N, c.C, c.H, c.W};
  const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
  const std::size_t bytes = count * sizeof(float);
  ASSERT_GT(bytes, std::size_t{8} << 20) << "the shape must count as coming from DRAM";
  const std::vector<float> values = userValues(count, 31337);
  int compared = 0;
  for (DType element : {DType::Float16, DType::Float}) {
    const ir::DeviceFormat format{DeviceLayout::DWHC, element};
    std::vector<std::byte> device(deviceBufferBytes(dims, format));
    const UserBufferView view{"dram", DType::Float, UserLayout::NCHW, dims};
    userToDevice(view, std::as_bytes(std::span(values)), format, device, ConversionPath::Scalar);
    std::vector<std::byte> scalar(bytes);
    deviceToUser(format, device, view, scalar, ConversionPath::Scalar);
    for (std::size_t offset : {0, 16}) {
      for (const VectorPath& p : vectorPaths()) {
        ASSERT_NO_FATAL_FAILURE(expectPostprocessAtLineOffset(
            format, device, view, scalar, offset, p, describe(c, DeviceLayout::DWHC, element, UserLayout::NCHW)));
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * static_cast<int>(vectorPaths().size()));
}

// Into float16 DWHC, cached tensors with W a multiple of 16 and chunks of an even width: the
// AVX-512 kernel writes two groups per sweep (halfPairOfGroups in DwhcTilesAvx512.cpp), unrolled
// (W = 16, 48, 128) and looped (W = 160). Chunks of 2, 4, 6 and 8 channels, alone and after a
// chunk of 8 (C = 14, 10), and an odd chunk beside them (C = 11); H = 8, 16 and 40 bands. The user
// floats start 4 bytes past a line, and the bytes after the device buffer stay untouched.
TEST_F(KernelsDeviceFormatPaths, PreprocessTwoGroupsPerSweepMatchesScalar) {
  std::vector<Case> shapes;
  for (int64_t c : {2, 4, 6, 8, 10, 11, 14})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{8, 16}, {16, 48}, {40, 128}, {16, 160}})
      shapes.push_back({1, c, h, w});
  shapes.push_back({2, 12, 16, 32});
  int compared = 0;
  uint32_t seed = 4200;
  for (const Case& c : shapes) {
    const ir::Dims dims{c.N, c.C, c.H, c.W};
    const auto count = static_cast<std::size_t>(c.N * c.C * c.H * c.W);
    const std::vector<float> values = userValues(count, seed++);
    std::vector<float> shifted(count + 32);
    const auto misalignment = reinterpret_cast<uintptr_t>(shifted.data()) % 64 / sizeof(float);
    float* user = shifted.data() + (16 - misalignment) % 16 + 1;  // 4 bytes past a line
    std::memcpy(user, values.data(), count * sizeof(float));
    const auto userBytes = std::as_bytes(std::span(user, count));
    const ir::DeviceFormat format{DeviceLayout::DWHC, DType::Float16};
    const std::size_t bytes = deviceBufferBytes(dims, format);
    const UserBufferView view{"pairs", DType::Float, UserLayout::NCHW, dims};
    auto scalar = guarded(bytes);
    userToDevice(view, userBytes, format, std::span(scalar).first(bytes), ConversionPath::Scalar);
    for (const VectorPath& p : vectorPaths()) {
      auto vector = guarded(bytes);
      userToDevice(view, userBytes, format, std::span(vector).first(bytes), p.path);
      ASSERT_TRUE(matchesScalar(vector, scalar, bytes))
          << p.name << " " << describe(c, DeviceLayout::DWHC, DType::Float16, UserLayout::NCHW);
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(shapes.size() * vectorPaths().size()));
}

}  // namespace
}  // namespace qaic::kernels
