// SPDX-License-Identifier: Apache-2.0
// matmul (NumPy semantics) and gemm (transpose flags, C broadcasting) against naive loops.
#include <gtest/gtest.h>

#include "GraphBuilder.hpp"

namespace qaic::kernels::test {
namespace {

void expectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "at " << i;
}

// Batched matmul reference on already broadcast-compatible shapes [B?, M, K] x [B?, K, N].
std::vector<float> naiveMatmul(const std::vector<float>& a, const std::vector<float>& b, int64_t batchA, int64_t batchB,
                               int64_t M, int64_t K, int64_t N) {
  const int64_t batch = std::max(batchA, batchB);
  std::vector<float> c(static_cast<std::size_t>(batch * M * N));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a[((batchA == 1 ? 0 : t) * M + i) * K + k] * b[((batchB == 1 ? 0 : t) * K + k) * N + j];
        c[static_cast<std::size_t>((t * M + i) * N + j)] = static_cast<float>(s);
      }
  return c;
}

TEST(KernelsMatmul, TwoDimensionalConstantAndInputWeights) {
  const auto a = randomFloats(5 * 7, 1), b = randomFloats(7 * 3, 2);
  const auto want = naiveMatmul(a, b, 1, 1, 5, 7, 3);
  GraphBuilder g;
  g.input("a", "TL_FLOAT", {5, 7})
      .create("b", "TL_FLOAT", {7, 3}, toDoubles(b))
      .op("mm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_FLOAT", {5, 3});
  expectNear(runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {5, 7}, a)}).at(0).values<float>(), want);
  GraphBuilder gi;
  gi.input("a", "TL_FLOAT", {5, 7})
      .input("b", "TL_FLOAT", {7, 3})
      .op("mm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_FLOAT", {5, 3});
  expectNear(
      runGraph(gi.graph(), {HostTensor::of(ir::DType::Float, {5, 7}, a), HostTensor::of(ir::DType::Float, {7, 3}, b)})
          .at(0)
          .values<float>(),
      want);
}

TEST(KernelsMatmul, BatchBroadcasting) {
  const auto a = randomFloats(4 * 2 * 3, 3), b = randomFloats(3 * 5, 4);
  GraphBuilder g;  // [4,2,3] x [3,5] -> [4,2,5]
  g.input("a", "TL_FLOAT", {4, 2, 3})
      .input("b", "TL_FLOAT", {3, 5})
      .op("mm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_FLOAT", {4, 2, 5});
  const auto out = runGraph(
      g.graph(), {HostTensor::of(ir::DType::Float, {4, 2, 3}, a), HostTensor::of(ir::DType::Float, {3, 5}, b)});
  expectNear(out.at(0).values<float>(), naiveMatmul(a, b, 4, 1, 2, 3, 5));
  GraphBuilder g2;  // [1,2,3] x [4,3,5] -> [4,2,5]
  const auto a1 = randomFloats(2 * 3, 5), b4 = randomFloats(4 * 3 * 5, 6);
  g2.input("a", "TL_FLOAT", {1, 2, 3})
      .input("b", "TL_FLOAT", {4, 3, 5})
      .op("mm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_FLOAT", {4, 2, 5});
  const auto out2 = runGraph(
      g2.graph(), {HostTensor::of(ir::DType::Float, {1, 2, 3}, a1), HostTensor::of(ir::DType::Float, {4, 3, 5}, b4)});
  expectNear(out2.at(0).values<float>(), naiveMatmul(a1, b4, 1, 4, 2, 3, 5));
}

TEST(KernelsMatmul, OneDimensionalOperands) {
  GraphBuilder g;  // [3] x [3,2] -> [2]; [2,3] x [3] -> [2]
  g.create("v", "TL_FLOAT", {3}, {1, 2, 3})
      .create("m", "TL_FLOAT", {3, 2}, {1, 2, 3, 4, 5, 6})
      .create("n", "TL_FLOAT", {2, 3}, {1, 0, -1, 2, 2, 2})
      .op("vm", "matmul", {{"src1", "v"}, {"src2", "m"}}, {{"dst", "vm"}})
      .op("nv", "matmul", {{"src1", "n"}, {"src2", "v"}}, {{"dst", "nv"}})
      .output("vm", "TL_FLOAT", {2})
      .output("nv", "TL_FLOAT", {2});
  const auto out = runGraph(g.graph());
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{22, 28}));
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{-2, 12}));
}

TEST(KernelsGemm, TransposeFlagsAlphaBetaAndBroadcastC) {
  const int64_t M = 4, K = 6, N = 3;
  const auto a = randomFloats(M * K, 7), b = randomFloats(K * N, 8), c = randomFloats(N, 9);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      // Store A as [K,M] when trans_a and B as [N,K] when trans_b.
      std::vector<float> as(a.size()), bs(b.size());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) as[ta ? k * M + i : i * K + k] = a[i * K + k];
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bs[tb ? j * K + k : k * N + j] = b[k * N + j];
      std::vector<float> want = naiveMatmul(a, b, 1, 1, M, K, N);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) want[i * N + j] = 0.5f * want[i * N + j] + 2.0f * c[j];
      GraphBuilder g;
      g.input("a", "TL_FLOAT", ta ? ir::Dims{K, M} : ir::Dims{M, K})
          .create("b", "TL_FLOAT", tb ? ir::Dims{N, K} : ir::Dims{K, N}, toDoubles(bs))
          .create("c", "TL_FLOAT", {N}, toDoubles(c))
          .op("gemm", "gemm", {{"a", "a"}, {"b", "b"}, {"c", "c"}}, {{"dst", "y"}},
              {{"alpha", 0.5}, {"beta", 2.0}, {"trans_a", ta}, {"trans_b", tb}})
          .output("y", "TL_FLOAT", {M, N});
      const auto out = runGraph(g.graph(),
                                {HostTensor::of(ir::DType::Float, ta ? ir::Dims{K, M} : ir::Dims{M, K}, as)});
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0"));
      expectNear(out.at(0).values<float>(), want);
    }
  }
}

TEST(KernelsLinear, IntegerMatmulWrapsLikeTheArithmeticOps) {
  GraphBuilder g;
  g.create("a", "TL_INT32", {2, 2}, {1, 2, 3, 2147483647})
      .create("b", "TL_INT32", {2, 2}, {1, 2, 3, 2})
      .op("intmm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_INT32", {2, 2});
  const auto c = runGraph(g.graph())[0].values<int32_t>();
  // 3 + 3 * (2^31 - 1) and 6 + 2 * (2^31 - 1) wrap around 2^32.
  EXPECT_EQ(c, (std::vector<int32_t>{7, 6, INT32_MIN, 4}));
}

TEST(KernelsLinear, NonNumericIsRejectedNamingTheOp) {
  GraphBuilder g;
  g.create("a", "TL_INT8", {2, 2}, {1, 2, 3, 4})
      .create("b", "TL_INT8", {2, 2}, {1, 2, 3, 4})
      .op("intmm", "matmul", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}})
      .output("c", "TL_INT8", {2, 2});
  try {
    runGraph(g.graph());
    FAIL() << "int8 matmul accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'intmm' (matmul)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TL_INT8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qaic::kernels::test
