// SPDX-License-Identifier: Apache-2.0
// The float16-operand matmul (ops/HalfMatmul.hpp) on every path this CPU has, against a double
// loop over the widened values, at sizes that leave every vector tail; then the graph ops that
// use it (matmul with a float16 src2, matmul_trans_b with either dtype) with batch broadcasting,
// on one thread and on two.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "GraphBuilder.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/ops/HalfMatmul.hpp"

namespace qaic::kernels::test {
namespace {

using ops::HalfPath;

std::vector<HalfPath> pathsOfThisCpu() {
  std::vector<HalfPath> paths{HalfPath::Scalar, HalfPath::Auto};
  if (ops::halfAvx512Available()) paths.push_back(HalfPath::Avx512);
  return paths;
}

std::vector<uint16_t> halves(const std::vector<float>& values) {
  std::vector<uint16_t> h;
  for (float v : values) h.push_back(floatToHalf(v));
  return h;
}

// d[b][i][j] = sum_q a[b][i][q] * B[b](q, j) in double, B widened from float16, [k, n] or [n, k].
std::vector<float> reference(const std::vector<float>& a, const std::vector<uint16_t>& b, int64_t batches, int64_t m,
                             int64_t k, int64_t n, bool transposed, bool broadcastB = false) {
  std::vector<float> d(static_cast<std::size_t>(batches * m * n));
  for (int64_t t = 0; t < batches; ++t) {
    const int64_t bt = broadcastB ? 0 : t;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const std::size_t at = static_cast<std::size_t>(bt * k * n + (transposed ? j * k + q : q * n + j));
          s += double(a[static_cast<std::size_t>((t * m + i) * k + q)]) * halfToFloat(b[at]);
        }
        d[static_cast<std::size_t>((t * m + i) * n + j)] = static_cast<float>(s);
      }
  }
  return d;
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want, int64_t k) {
  ASSERT_EQ(got.size(), want.size());
  // Float32 sums of k products of values in [-1, 1]: a few ulps of k each.
  const double tolerance = 1e-6 * static_cast<double>(k) + 1e-6;
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << "at " << i;
}

class HalfMatmulPaths : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t, bool>> {};

TEST_P(HalfMatmulPaths, MatchesTheWidenedProductOnEveryPath) {
  const auto [m, k, n, transposed] = GetParam();
  const auto a = randomFloats(static_cast<std::size_t>(m * k), 11);
  const auto b = halves(randomFloats(static_cast<std::size_t>(k * n), 12));
  const auto want = reference(a, b, 1, m, k, n, transposed);
  for (HalfPath path : pathsOfThisCpu()) {
    std::vector<float> d(static_cast<std::size_t>(m * n), std::nanf(""));
    const ops::HalfProduct product{a.data(), b.data(), d.data(), m, k, n, transposed};
    // Two column ranges, as the kernel's threads split them: each must write only its own.
    ops::halfMatmulColumns(product, 0, n / 3, path);
    ops::halfMatmulColumns(product, n / 3, n, path);
    SCOPED_TRACE("path " + std::to_string(static_cast<int>(path)));
    expectClose(d, want, k);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HalfMatmulPaths,
                         ::testing::Values(std::make_tuple(1, 128, 1024, true),   // a decode step's scores
                                           std::make_tuple(1, 1024, 128, false),  // and its values
                                           std::make_tuple(32, 128, 96, true), std::make_tuple(32, 96, 128, false),
                                           std::make_tuple(5, 37, 19, true), std::make_tuple(5, 37, 19, false),
                                           std::make_tuple(7, 1, 70, false), std::make_tuple(3, 17, 65, false),
                                           std::make_tuple(2, 15, 1, true), std::make_tuple(2, 37, 70, false),
                                           std::make_tuple(1, 33, 17, true), std::make_tuple(1, 33, 200, false)));

TEST(HalfMatmulPaths, AForcedPathTheCpuLacksIsAnError) {
  if (ops::halfAvx512Available()) {
    EXPECT_NO_THROW(ops::halfMatmulColumns({}, 0, 0, HalfPath::Avx512));
  } else {
    EXPECT_THROW(ops::halfMatmulColumns({}, 0, 0, HalfPath::Avx512), std::runtime_error);
  }
}

// [heads, m, k] . [heads, k, n] (or [heads, n, k]) through the graph ops, float16 src2 as an input.
std::vector<float> runHalfGraph(const std::string& optype, const std::vector<float>& a, const std::vector<uint16_t>& b,
                                const ir::Dims& aDims, const ir::Dims& bDims, const ir::Dims& dDims, int threads) {
  GraphBuilder g;
  g.input("a", "TL_FLOAT", aDims)
      .input("b", "TL_FLOAT16", bDims)
      .op("mm", optype, {{"src1", "a"}, {"src2", "b"}}, {{"dst", "d"}})
      .output("d", "TL_FLOAT", dDims);
  BuildOptions options;
  options.threads = threads;
  return runGraph(g.graph(), {HostTensor::of(ir::DType::Float, aDims, a), HostTensor::of(ir::DType::Float16, bDims, b)},
                  nullptr, options)
      .at(0)
      .values<float>();
}

TEST(KernelsHalfMatmul, GraphOpsReadAFloat16OperandBatchedAndBroadcastOnOneAndTwoThreads) {
  // Attention's shapes at a decode step, small: 8 heads, one row, 256 positions of 64.
  const int64_t heads = 8, m = 1, k = 64, n = 256;
  const auto q = randomFloats(static_cast<std::size_t>(heads * m * k), 21);
  const auto keys = halves(randomFloats(static_cast<std::size_t>(heads * n * k), 22));
  const auto scores = reference(q, keys, heads, m, k, n, true);
  const auto p = randomFloats(static_cast<std::size_t>(heads * m * n), 23);
  const auto values = halves(randomFloats(static_cast<std::size_t>(heads * n * k), 24));
  const auto mixed = reference(p, values, heads, m, n, k, false);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    expectClose(runHalfGraph("matmul_trans_b", q, keys, {1, heads, m, k}, {1, heads, n, k}, {1, heads, m, n}, threads),
                scores, k);
    expectClose(runHalfGraph("matmul", p, values, {1, heads, m, n}, {1, heads, n, k}, {1, heads, m, k}, threads), mixed,
                n);
  }
  // One float16 matrix broadcast over every batch of src1.
  const auto shared = halves(randomFloats(static_cast<std::size_t>(n * k), 25));
  expectClose(runHalfGraph("matmul_trans_b", q, shared, {heads, m, k}, {n, k}, {heads, m, n}, 2),
              reference(q, shared, heads, m, k, n, true, true), k);
}

TEST(KernelsHalfMatmul, FloatMatmulTransBEqualsMatmulOfTheTranspose) {
  const auto a = randomFloats(3 * 4 * 6, 31), b = randomFloats(3 * 5 * 6, 32);
  std::vector<float> bT(b.size());  // [3, 6, 5]
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 5; ++j)
      for (int q = 0; q < 6; ++q)
        bT[static_cast<std::size_t>((t * 6 + q) * 5 + j)] = b[static_cast<std::size_t>((t * 5 + j) * 6 + q)];
  auto product = [&](const std::string& optype, const std::vector<float>& rhs, const ir::Dims& rhsDims) {
    GraphBuilder g;
    g.input("a", "TL_FLOAT", {3, 4, 6})
        .input("b", "TL_FLOAT", rhsDims)
        .op("mm", optype, {{"src1", "a"}, {"src2", "b"}}, {{"dst", "d"}})
        .output("d", "TL_FLOAT", {3, 4, 5});
    return runGraph(g.graph(),
                    {HostTensor::of(ir::DType::Float, {3, 4, 6}, a), HostTensor::of(ir::DType::Float, rhsDims, rhs)})
        .at(0)
        .values<float>();
  };
  expectClose(product("matmul_trans_b", b, {3, 5, 6}), product("matmul", bT, {3, 6, 5}), 6);
}

}  // namespace
}  // namespace qaic::kernels::test
