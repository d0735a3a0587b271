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

// B's rows where they lie, some of them absent (rows of zeros), on every path: the product of
// the same rows copied into a matrix with zeros where rows are absent.
TEST(HalfMatmulPaths, RowsWhereTheyLieWithAbsentOnesAreRowsOfZeros) {
  for (const bool transposed : {true, false}) {
    const int64_t m = 3, k = transposed ? 40 : 70, n = transposed ? 70 : 40, rowLength = transposed ? k : n;
    const int64_t rowCount = transposed ? n : k;
    const auto a = randomFloats(static_cast<std::size_t>(m * k), 41);
    const auto pool = halves(randomFloats(static_cast<std::size_t>(200 * rowLength), 42));  // rows to pick from
    std::vector<const uint16_t*> rows;
    std::vector<uint16_t> matrix;
    for (int64_t r = 0; r < rowCount; ++r) {
      const bool absent = r % 5 == 2 || r >= rowCount - 3;  // scattered and a run at the end
      const int64_t from = (r * 37) % 200;
      rows.push_back(absent ? nullptr : pool.data() + from * rowLength);
      for (int64_t c = 0; c < rowLength; ++c)
        matrix.push_back(absent ? uint16_t{0} : pool[static_cast<std::size_t>(from * rowLength + c)]);
    }
    const auto want = reference(a, matrix, 1, m, k, n, transposed);
    for (HalfPath path : pathsOfThisCpu()) {
      std::vector<float> d(static_cast<std::size_t>(m * n), std::nanf(""));
      ops::HalfProduct product{a.data(), nullptr, d.data(), m, k, n, transposed, rows.data()};
      ops::halfMatmulColumns(product, 0, n, path);
      SCOPED_TRACE("path " + std::to_string(static_cast<int>(path)) + (transposed ? " transposed" : ""));
      expectClose(d, want, k);
    }
  }
}

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

// matmul_gathered_b against the ops it stands for, gather_nd (batch_dims 2) then the product, on
// a cache [1, heads, positions, d] with efficient-transformers' marker for unfilled positions,
// a negative index, int32 and int64 indices, one thread and two.
TEST(KernelsHalfMatmul, GatheredRowsEqualGatherNdThenTheProduct) {
  const int64_t heads = 4, positions = 48, depth = 32, picked = 40;
  const auto cache = halves(randomFloats(static_cast<std::size_t>(heads * positions * depth), 51));
  std::vector<int64_t> index;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < picked; ++j)
      index.push_back(j >= 30 ? int64_t{2147483647} : j == 7 ? -1 : (j * 5 + h) % positions);
  const ir::Dims cacheDims{1, heads, positions, depth}, indexDims{1, heads, picked, 1};
  for (const std::string indexType : {"TL_INT64", "TL_INT32"}) {
    const auto indices = indexType == "TL_INT64" ? HostTensor::of(ir::DType::Int64, indexDims, index)
                                                 : HostTensor::of(ir::DType::Int32, indexDims,
                                                                  std::vector<int32_t>(index.begin(), index.end()));
    for (const bool transposed : {true, false}) {
      const ir::Dims aDims = transposed ? ir::Dims{1, heads, 1, depth} : ir::Dims{1, heads, 1, picked};
      const ir::Dims dDims = transposed ? ir::Dims{1, heads, 1, picked} : ir::Dims{1, heads, 1, depth};
      const auto a = randomFloats(static_cast<std::size_t>(ir::elementCount(aDims)), 52);
      const std::vector<HostTensor> inputs{HostTensor::of(ir::DType::Float, aDims, a),
                                           HostTensor::of(ir::DType::Float16, cacheDims, cache), indices};
      GraphBuilder apart;
      apart.input("a", "TL_FLOAT", aDims)
          .input("cache", "TL_FLOAT16", cacheDims)
          .input("idx", indexType, indexDims)
          .op("gather", "gather_nd", {{"src", "cache"}, {"indices", "idx"}}, {{"dst", "rows"}}, {{"batch_dims", 2}})
          .op("mm", transposed ? "matmul_trans_b" : "matmul", {{"src1", "a"}, {"src2", "rows"}}, {{"dst", "d"}})
          .output("d", "TL_FLOAT", dDims);
      const auto want = runGraph(apart.graph(), inputs).at(0).values<float>();
      for (int threads : {1, 2}) {
        GraphBuilder fused;
        fused.input("a", "TL_FLOAT", aDims)
            .input("cache", "TL_FLOAT16", cacheDims)
            .input("idx", indexType, indexDims)
            .op("mm", "matmul_gathered_b", {{"src1", "a"}, {"src2", "cache"}, {"indices", "idx"}}, {{"dst", "d"}},
                {{"trans_b", transposed}})
            .output("d", "TL_FLOAT", dDims);
        BuildOptions options;
        options.threads = threads;
        SCOPED_TRACE(indexType + (transposed ? " transposed " : " ") + std::to_string(threads));
        expectClose(runGraph(fused.graph(), inputs, nullptr, options).at(0).values<float>(), want, picked);
      }
    }
  }
}

TEST(KernelsHalfMatmul, AnIndexOutOfRangeFailsTheRunNamingIt) {
  GraphBuilder g;
  g.input("a", "TL_FLOAT", {1, 2, 1, 8})
      .input("cache", "TL_FLOAT16", {1, 2, 6, 8})
      .input("idx", "TL_INT64", {1, 2, 3, 1})
      .op("mm", "matmul_gathered_b", {{"src1", "a"}, {"src2", "cache"}, {"indices", "idx"}}, {{"dst", "d"}},
          {{"trans_b", true}})
      .output("d", "TL_FLOAT", {1, 2, 1, 3});
  try {
    runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {1, 2, 1, 8}, std::vector<float>(16, 1.0f)),
                         HostTensor::of(ir::DType::Float16, {1, 2, 6, 8}, std::vector<uint16_t>(96, 0)),
                         HostTensor::of(ir::DType::Int64, {1, 2, 3, 1}, std::vector<int64_t>{0, 1, 2, 3, 9, 5})});
    FAIL() << "an index of 9 on 6 positions ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'mm'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("9"), std::string::npos) << e.what();
  }
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
