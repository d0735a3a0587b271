// SPDX-License-Identifier: Apache-2.0
// The host executor with MXFP6-encoded constants: a matmul over a 3-D input reads the encoded
// bytes in place on the program's threads; a graph where another op would read an encoded
// constant, or a gemm with trans_a, is refused naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "GraphBuilder.hpp"
#include "kernels/HostProgram.hpp"
#include "kernels/mx/Mxfp6Format.hpp"

namespace qaic::kernels::test {
namespace {

constexpr int64_t kK = 64, kN = 40;

struct EncodedWeight {
  std::vector<float> plain;
  std::vector<std::byte> bytes;
  ir::WeightTensor tensor;

  EncodedWeight() : plain(kK * kN), bytes(mx::encodedBytes(kK, kN)) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    for (auto& v : plain) v = normal(rng);
    mx::encodeMxfp6Columns(mx::ElementFormat::E2M3, {std::as_bytes(std::span(plain)), ir::DType::Float, kK, kN, false},
                           0, kN, bytes);
    tensor = {"w", ir::DType::Float, {kK, kN}, bytes, ir::WeightEncoding::Mxfp6E2M3, 0};
  }
  ConstantLookup lookup() const {
    return [this](std::string_view name) { return name == "w" ? &tensor : nullptr; };
  }
};

TEST(KernelsMxfp6, MatmulOverA3dInputReadsTheEncodedWeightInPlace) {
  EncodedWeight w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {2, 3, kK})
      .create("w", "TL_FLOAT", {kK, kN}, {}, {0, 0}, true)
      .op("mm", "matmul", {{"src1", "x"}, {"src2", "w"}}, {{"dst", "y"}})
      .output("y", "TL_FLOAT", {2, 3, kN});
  BuildOptions options;
  options.threads = 2;
  auto program = HostProgram::build(g.graph(), w.lookup(), options);
  std::vector<float> x(2 * 3 * kK), y(2 * 3 * kN, -1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i));
  TensorView in{ir::DType::Float, {2, 3, kK}, x.data(), x.size() * sizeof(float)};
  TensorView out{ir::DType::Float, {2, 3, kN}, y.data(), y.size() * sizeof(float)};
  program->run(std::span(&in, 1), std::span(&out, 1));
  std::vector<float> column(kK);
  double farFromPlain = 0;
  for (int64_t n = 0; n < kN; ++n) {
    mx::decodeMxfp6Column(mx::ElementFormat::E2M3, w.bytes, kK, kN, n, column.data());
    for (int64_t row = 0; row < 6; ++row) {
      double sum = 0, plain = 0;
      for (int64_t k = 0; k < kK; ++k) {
        sum += double(x[row * kK + k]) * column[k];
        plain += double(x[row * kK + k]) * w.plain[k * kN + n];
      }
      EXPECT_NEAR(y[row * kN + n], sum, 1e-5) << row << "," << n;
      farFromPlain = std::max(farFromPlain, std::fabs(sum - plain));
    }
  }
  EXPECT_GT(farFromPlain, 1e-4) << "the weights read must be the rounded ones";
}

TEST(KernelsMxfp6, AnEncodedConstantReadByAnotherOpIsRefusedNamingIt) {
  EncodedWeight w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {3, kK})
      .create("w", "TL_FLOAT", {kK, kN}, {}, {0, 0}, true)
      .op("mm", "matmul", {{"src1", "x"}, {"src2", "w"}}, {{"dst", "y"}})
      .op("act", "relu", {{"src", "w"}}, {{"dst", "z"}})
      .output("y", "TL_FLOAT", {3, kN})
      .output("z", "TL_FLOAT", {kK, kN});
  try {
    HostProgram::build(g.graph(), w.lookup());
    FAIL() << "built";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("constant 'w' is mxfp6-e2m3-encoded"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("op 'act' (relu)"), std::string::npos) << e.what();
  }
}

TEST(KernelsMxfp6, GemmWithTransAOrTheOtherAxisIsRefused) {
  EncodedWeight w;
  const auto gemm = [&](bool transA, bool transB) {
    GraphBuilder g;
    g.input("a", "TL_FLOAT", transA ? ir::Dims{kK, 2} : ir::Dims{2, kK})
        .create("w", "TL_FLOAT", transB ? ir::Dims{kN, kK} : ir::Dims{kK, kN}, {}, {0, 0}, true)
        .create("c", "TL_FLOAT", {kN}, {0})
        .op("fc", "gemm", {{"a", "a"}, {"b", "w"}, {"c", "c"}}, {{"dst", "y"}},
            {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", transA}, {"trans_b", transB}})
        .output("y", "TL_FLOAT", {2, kN});
    return g.graph();
  };
  EXPECT_NO_THROW(HostProgram::build(gemm(false, false), w.lookup()));
  EXPECT_THROW(HostProgram::build(gemm(true, false), w.lookup()), ExecutionError);
  // Stored along dims[0] = K, but trans_b says dims[1] is K.
  w.tensor.dims = {kN, kK};
  EXPECT_THROW(HostProgram::build(gemm(false, true), w.lookup()), ExecutionError);
}

}  // namespace
}  // namespace qaic::kernels::test
