// SPDX-License-Identifier: Apache-2.0
// The MX kernels against dequantize-then-naive-matmul (in double), every path the CPU has
// forced in turn: the fused kernel (M <= 4) and the panel kernel (larger M).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/mx/Mxfp6Matmul.hpp"

namespace qaic::kernels::mx {
namespace {

struct Case {
  int64_t m, k, n;
};

std::vector<MxPath> pathsOfThisCpu() {
  std::vector<MxPath> paths{MxPath::Scalar};
  if (mxAvx2Available()) paths.push_back(MxPath::Avx2);
  if (mxAvx512Available()) paths.push_back(MxPath::Avx512);
  if (mxAvx512VbmiAvailable()) paths.push_back(MxPath::Avx512Vbmi);
  return paths;
}

void check(const Case& c, MxPath path, int threads, float alpha) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.k * 7 + c.n));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(c.k * c.n), x(c.m * c.k);
  for (auto& v : w) v = normal(rng) * 0.05f;
  for (auto& v : x) v = normal(rng);
  std::vector<std::byte> encoded(encodedBytes(c.k, c.n));
  encodeMxfp6Columns(ElementFormat::E2M3, {std::as_bytes(std::span(w)), ir::DType::Float, c.k, c.n, false}, 0, c.n,
                     encoded);
  std::vector<float> dequantized(c.k * c.n), column(c.k);
  for (int64_t j = 0; j < c.n; ++j) {
    decodeMxfp6Column(ElementFormat::E2M3, encoded, c.k, c.n, j, column.data());
    for (int64_t i = 0; i < c.k; ++i) dequantized[i * c.n + j] = column[i];
  }
  std::vector<float> y(c.m * c.n, -1.0f);
  mxfp6Matmul({ElementFormat::E2M3, encoded, c.k, c.n}, x.data(), c.m, y.data(), alpha, threads, path);
  for (int64_t r = 0; r < c.m; ++r) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t i = 0; i < c.k; ++i) {
        sum += double(x[r * c.k + i]) * dequantized[i * c.n + j];
        magnitude += std::fabs(double(x[r * c.k + i]) * dequantized[i * c.n + j]);
      }
      // float32 accumulation: error bounded by a few ulps of the sum of magnitudes.
      const double bound = 1e-6 * magnitude * std::sqrt(double(c.k)) + 1e-6;
      ASSERT_NEAR(y[r * c.n + j], alpha * sum, std::fabs(alpha) * bound)
          << "row " << r << " column " << j << " m " << c.m << " k " << c.k << " n " << c.n;
    }
  }
}

class Mxfp6MatmulPaths : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(Mxfp6MatmulPaths, MatchesDequantizeThenMultiplyOnEveryPath) {
  const auto [m, k] = GetParam();
  for (MxPath path : pathsOfThisCpu()) {
    SCOPED_TRACE(static_cast<int>(path));
    const int64_t n = (k > 1000 && path == MxPath::Scalar) ? 9 : 37;  // N odd; the scalar path is slow
    check({m, k, n}, path, 1, 1.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Mxfp6MatmulPaths,
                         ::testing::Combine(::testing::Values<int64_t>(1, 3, 37, 128),
                                            ::testing::Values<int64_t>(4096, 100)));

TEST(Mxfp6Matmul, AlphaAndThreadsAndOddKOnTheVectorPaths) {
  for (MxPath path : pathsOfThisCpu()) {
    check({2, 33, 101}, path, 2, -0.5f);
    check({5, 31, 17}, path, 2, 2.0f);
    check({1, 4096, 333}, path, 2, 1.0f);
  }
}

TEST(Mxfp6Matmul, WrongByteCountIsRefused) {
  std::vector<std::byte> bytes(10);
  float x[32] = {}, y[2] = {};
  EXPECT_THROW(mxfp6Matmul({ElementFormat::E2M3, bytes, 32, 2}, x, 1, y), MxFormatError);
}

}  // namespace
}  // namespace qaic::kernels::mx
