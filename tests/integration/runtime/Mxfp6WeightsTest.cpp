// SPDX-License-Identifier: Apache-2.0
// qaic-exec -mxfp6-matmul end to end: the container stores the MatMul and Gemm weights MXFP6
// (one constant read by another op stays plain), and the emulated card computes with them in
// place, matching a float reference of the dequantized weights; without the flag nothing changes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "CompileProgram.hpp"
#include "ContainerFiles.hpp"
#include "DeviceData.hpp"
#include "IrGraphs.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

namespace mx = kernels::mx;

constexpr int64_t kRows = 3, kDepth = 100, kMatmulColumns = 37, kGemmColumns = 21;
constexpr float kAlpha = 0.5f, kBeta = 2.0f;

std::string createOp(const std::string& name, int64_t d0, int64_t d1) {
  return R"({"name":"make_)" + name +
         R"(","optype":"create","tensors_in":[],"tensors_out":[{"arg_name":"dst","name":")" + name +
         R"("}],"params":[{"arg_name":"dtype","value":"TL_FLOAT"},{"arg_name":"dims","value":[)" + std::to_string(d0) +
         "," + std::to_string(d1) +
         R"(]},{"arg_name":"ran","value":[0,0]},{"arg_name":"data","value":[0]},{"arg_name":"from_file","value":true}]})";
}

std::string io(const std::string& name, const std::string& direction, int64_t d1) {
  return R"({"name":")" + name + R"(","tensor":")" + name + R"(","direction":")" + direction +
         R"(","dtype":"TL_FLOAT","dims":[)" + std::to_string(kRows) + "," + std::to_string(d1) + "]}";
}

// y1 = x . w1 (matmul), y2 = 0.5 x . w2^T + 2 c (gemm, trans_b), y3 = x + bias (bias read by an
// elementwise op: stays plain).
std::string networkIr() {
  const std::string ops =
      createOp("w1", kDepth, kMatmulColumns) + "," + createOp("w2", kGemmColumns, kDepth) + "," +
      createOp("bias", kRows, kDepth) + "," +
      R"({"name":"make_c","optype":"create","tensors_in":[],"tensors_out":[{"arg_name":"dst","name":"c"}],)"
      R"("params":[{"arg_name":"dtype","value":"TL_FLOAT"},{"arg_name":"dims","value":[)" +
      std::to_string(kGemmColumns) +
      R"(]},{"arg_name":"ran","value":[0,0]},{"arg_name":"data","value":[1,2,3]},{"arg_name":"from_file","value":false}]},)"
      R"({"name":"mm","optype":"matmul","tensors_in":[{"arg_name":"src1","name":"x"},{"arg_name":"src2","name":"w1"}],)"
      R"("tensors_out":[{"arg_name":"dst","name":"y1"}],"params":[]},)"
      R"({"name":"fc","optype":"gemm","tensors_in":[{"arg_name":"a","name":"x"},{"arg_name":"b","name":"w2"},)"
      R"({"arg_name":"c","name":"c"}],"tensors_out":[{"arg_name":"dst","name":"y2"}],)"
      R"("params":[{"arg_name":"alpha","value":0.5},{"arg_name":"beta","value":2.0},)"
      R"({"arg_name":"trans_a","value":false},{"arg_name":"trans_b","value":true}]},)"
      R"({"name":"add","optype":"elew","tensors_in":[{"arg_name":"src1","name":"x"},{"arg_name":"src2","name":"bias"}],)"
      R"("tensors_out":[{"arg_name":"dst","name":"y3"}],"params":[{"arg_name":"elew_op","value":"TL_SUM"}]})";
  const std::string ios = io("x", "in", kDepth) + "," + io("y1", "out", kMatmulColumns) + "," +
                          io("y2", "out", kGemmColumns) + "," + io("y3", "out", kDepth);
  return R"({"ops":[)" + ops + R"(],"io":[)" + ios + R"(],"weights":"mx.weights.bin"})";
}

std::vector<float> randomValues(std::size_t count, unsigned seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> v(count);
  for (auto& x : v) x = normal(rng);
  return v;
}

class Mxfp6WeightsTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    if (HasFatalFailure()) return;
    w1_ = randomValues(kDepth * kMatmulColumns, 1, 0.1f);
    w2_ = randomValues(kGemmColumns * kDepth, 2, 0.1f);
    bias_ = randomValues(kRows * kDepth, 3, 1.0f);
    const auto tensor = [](const std::string& name, const std::vector<float>& v, int64_t d0, int64_t d1) {
      return ir::WeightTensor{name, ir::DType::Float, {d0, d1}, std::as_bytes(std::span(v))};
    };
    const std::vector<ir::WeightTensor> tensors{tensor("w1", w1_, kDepth, kMatmulColumns),
                                                tensor("w2", w2_, kGemmColumns, kDepth),
                                                tensor("bias", bias_, kRows, kDepth)};
    ir::writeWeightsFile((work_ / "mx.weights.bin").string(), tensors);
    irPath_ = work_ / "mx.json";
    std::ofstream(irPath_) << networkIr();
  }

  // The outputs y1, y2, y3 of one inference on the emulated card.
  std::vector<std::vector<float>> run(const Network& network, const std::vector<float>& x) {
    if (!context_) context_ = makeContext();
    auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
    std::vector<float> input = x, y1(kRows * kMatmulColumns, -1.0f), y2(kRows * kGemmColumns, -1.0f),
                       y3(kRows * kDepth, -1.0f);
    inferOnce(*set, {heapBuffer(input), heapBuffer(y1), heapBuffer(y2), heapBuffer(y3)}, 1);
    return {y1, y2, y3};
  }

  std::unique_ptr<container::QpcImage> image(const Network& network) {
    return container::QpcImage::open((network.qpcDir / "programqpc.bin").string());
  }

  std::vector<float> w1_, w2_, bias_;
  std::filesystem::path irPath_;
};

const container::QpcConstant& constantNamed(const container::QpcImage& image, const std::string& name) {
  const auto* c = image.findConstant(name);
  if (c == nullptr) throw std::runtime_error("no constant " + name);
  return *c;
}

// W[K, N] dequantized from the container's bytes, row-major [K, N].
std::vector<float> dequantized(const container::QpcConstant& c, int64_t k, int64_t n) {
  std::vector<float> w(k * n), column(k);
  for (int64_t j = 0; j < n; ++j) {
    mx::decodeMxfp6Column(mx::ElementFormat::E2M3, c.tensor.data, k, n, j, column.data());
    for (int64_t i = 0; i < k; ++i) w[i * n + j] = column[i];
  }
  return w;
}

TEST_F(Mxfp6WeightsTest, MatmulAndGemmWeightsAreStoredMxfp6AndTheCardComputesWithThem) {
  const Network network = compileFile("mx", irPath_, {"-mxfp6-matmul"});
  const auto qpc = image(network);
  EXPECT_EQ(qpc->contents().formatVersion, 3u);
  const auto& w1 = constantNamed(*qpc, "w1");
  const auto& w2 = constantNamed(*qpc, "w2");
  const auto& bias = constantNamed(*qpc, "bias");
  EXPECT_EQ(w1.tensor.encoding, ir::WeightEncoding::Mxfp6E2M3);
  EXPECT_EQ(w1.tensor.reductionAxis, 0);
  EXPECT_EQ(w1.tensor.dtype, ir::DType::Float) << "the logical type stays";
  EXPECT_EQ(w1.tensor.dims, (ir::Dims{kDepth, kMatmulColumns}));
  // ceil(100 / 32) = 4 blocks of 24 element bytes + 1 scale byte per column.
  EXPECT_EQ(w1.tensor.data.size(), 4u * 25u * kMatmulColumns);
  EXPECT_EQ(w2.tensor.encoding, ir::WeightEncoding::Mxfp6E2M3);
  EXPECT_EQ(w2.tensor.reductionAxis, 1) << "gemm trans_b: K is dims[1]";
  EXPECT_EQ(w2.tensor.data.size(), 4u * 25u * kGemmColumns);
  EXPECT_EQ(bias.tensor.encoding, ir::WeightEncoding::Plain);
  EXPECT_EQ(bias.tensor.data.size(), sizeof(float) * kRows * kDepth);

  const auto x = randomValues(kRows * kDepth, 4, 1.0f);
  const auto outputs = run(network, x);
  const auto q1 = dequantized(w1, kDepth, kMatmulColumns);
  const auto q2 = dequantized(w2, kDepth, kGemmColumns);  // [K, N]: w2 transposed
  const float c[kGemmColumns] = {1, 2, 3};
  double farFromPlain = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < kMatmulColumns; ++j) {
      double sum = 0, plain = 0;
      for (int64_t i = 0; i < kDepth; ++i) {
        sum += double(x[r * kDepth + i]) * q1[i * kMatmulColumns + j];
        plain += double(x[r * kDepth + i]) * w1_[i * kMatmulColumns + j];
      }
      EXPECT_NEAR(outputs[0][r * kMatmulColumns + j], sum, 1e-4) << r << "," << j;
      farFromPlain = std::max(farFromPlain, std::fabs(plain - sum));
    }
    for (int64_t j = 0; j < kGemmColumns; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < kDepth; ++i) sum += double(x[r * kDepth + i]) * q2[i * kGemmColumns + j];
      EXPECT_NEAR(outputs[1][r * kGemmColumns + j], kAlpha * sum + kBeta * c[j], 1e-4) << r << "," << j;
    }
    for (int64_t i = 0; i < kDepth; ++i)
      EXPECT_EQ(outputs[2][r * kDepth + i], x[r * kDepth + i] + bias_[r * kDepth + i]);
  }
  EXPECT_GT(farFromPlain, 1e-3) << "the card must have used the MXFP6-rounded weights";
}

TEST_F(Mxfp6WeightsTest, WithoutTheFlagEveryConstantStaysPlainInAnOlderVersion) {
  const Network network = compileFile("plain", irPath_);
  const auto qpc = image(network);
  EXPECT_EQ(qpc->contents().formatVersion, 1u);
  for (const auto& c : qpc->constants()) {
    EXPECT_EQ(c.tensor.encoding, ir::WeightEncoding::Plain) << c.tensor.name;
    EXPECT_EQ(c.tensor.data.size(), sizeof(float) * ir::elementCount(c.tensor.dims)) << c.tensor.name;
  }
  const auto& w1 = constantNamed(*qpc, "w1");
  EXPECT_TRUE(std::equal(w1.tensor.data.begin(), w1.tensor.data.end(), std::as_bytes(std::span(w1_)).begin()));
}

TEST_F(Mxfp6WeightsTest, ANaNWeightIsACompileErrorNamingTheConstant) {
  w1_[7] = std::nanf("");
  const std::vector<ir::WeightTensor> tensors{
      {"w1", ir::DType::Float, {kDepth, kMatmulColumns}, std::as_bytes(std::span(w1_))},
      {"w2", ir::DType::Float, {kGemmColumns, kDepth}, std::as_bytes(std::span(w2_))},
      {"bias", ir::DType::Float, {kRows, kDepth}, std::as_bytes(std::span(bias_))}};
  ir::writeWeightsFile((work_ / "mx.weights.bin").string(), tensors);
  const auto result = testing::runCompiler(irPath_, work_ / "nan-qpc", {"-mxfp6-matmul"});
  const std::string said = result.out + result.err;
  EXPECT_NE(result.exitCode, 0);
  EXPECT_NE(said.find("'w1' could not be encoded"), std::string::npos) << said;
  EXPECT_NE(said.find("is NaN"), std::string::npos) << said;
}

}  // namespace
}  // namespace qaic::rt::test
