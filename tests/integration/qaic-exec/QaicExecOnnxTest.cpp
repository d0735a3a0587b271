// SPDX-License-Identifier: Apache-2.0
// qaic-exec on an ONNX model (generated with the Debian python3-onnx at test time).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ContainerFiles.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "TestModels.hpp"

namespace qaic::testing {
namespace {

using namespace std::chrono_literals;

TEST(QaicExecOnnx, SymbolicBatchFromDefineSymbol) {
  TempDir dir("qaic-exec-onnx");
  const std::string model = (dir.path() / "relu.onnx").string();
  const auto gen = runCapturing(
      {"/usr/bin/python3", (sourceDir() / "tests/integration/qaic-exec/make_relu_onnx.py").string(), model}, 60s);
  ASSERT_EQ(gen.exitCode, 0) << gen.err;
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + model, "-aic-binary-dir=" + out, "-onnx-define-symbol=N,3"});
#ifdef QAIC_HAVE_ONNX
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto image = container::QpcImage::open(out + "/programqpc.bin");
  ASSERT_EQ(image->buffers().size(), 2u);
  EXPECT_EQ(image->buffers()[0].io.dims, (ir::Dims{3, 4}));
  EXPECT_EQ(image->buffers()[1].io.direction, ir::Direction::Out);
  EXPECT_EQ(image->programs()[0].name, "relu");
#else
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("ONNX support not built"), std::string::npos) << r.err;
#endif
}

#ifdef QAIC_HAVE_ONNX
// -mxfp6-matmul on an ONNX model: the MatMul and Gemm (transB) initializers are stored MXFP6
// (25 bytes per 32 elements along K in each output column), the Add's and Gemm's C are not.
TEST(QaicExecOnnx, Mxfp6MatmulEncodesTheMatmulAndGemmWeightsOnly) {
  TempDir dir("qaic-exec-onnx");
  const std::string model = (dir.path() / "matmul.onnx").string();
  const auto gen = runCapturing(
      {"/usr/bin/python3", (sourceDir() / "tests/integration/qaic-exec/make_matmul_onnx.py").string(), model}, 60s);
  ASSERT_EQ(gen.exitCode, 0) << gen.err;
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + model, "-aic-binary-dir=" + out, "-mxfp6-matmul", "-convert-to-fp16"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto image = container::QpcImage::open(out + "/programqpc.bin");
  EXPECT_EQ(image->contents().formatVersion, 3u);
  const auto* w1 = image->findConstant("W1");
  const auto* w2 = image->findConstant("W2");
  ASSERT_TRUE(w1 && w2);
  EXPECT_EQ(w1->tensor.encoding, ir::WeightEncoding::Mxfp6E2M3);
  EXPECT_EQ(w1->tensor.data.size(), 40u * 2u * 25u);  // N = 40 columns, K = 64: 2 blocks
  EXPECT_EQ(w2->tensor.encoding, ir::WeightEncoding::Mxfp6E2M3);
  EXPECT_EQ(w2->tensor.reductionAxis, 1);
  EXPECT_EQ(w2->tensor.data.size(), 24u * 2u * 25u);
  for (const char* plain : {"B", "C"}) {
    const auto* c = image->findConstant(plain);
    ASSERT_NE(c, nullptr) << plain;
    EXPECT_EQ(c->tensor.encoding, ir::WeightEncoding::Plain) << plain;
    EXPECT_EQ(c->tensor.dtype, ir::DType::Float16) << plain << ": -convert-to-fp16 as without the flag";
  }
}
#endif

// Every unsupported operator, attribute and attribute value of a model in one error, exit 2, and
// no container left behind.
TEST(QaicExecOnnx, EveryOffenderInOneErrorExitTwo) {
  TempDir dir("qaic-exec-onnx");
  const std::string model = (dir.path() / "unsupported.onnx").string();
  const auto gen = runCapturing(
      {"/usr/bin/python3", (sourceDir() / "tests/integration/qaic-exec/make_unsupported_onnx.py").string(), model},
      60s);
  ASSERT_EQ(gen.exitCode, 0) << gen.err;
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + model, "-aic-binary-dir=" + out});
  EXPECT_EQ(r.exitCode, 2) << r.err;
#ifdef QAIC_HAVE_ONNX
  for (const char* offender :
       {"Unique (node 'unique')", "NonZero (node 'nonzero')", "Relu node 'relu': attribute 'sharpness'",
        "Resize node 'crop': attribute 'coordinate_transformation_mode' is 'tf_crop_and_resize'"}) {
    EXPECT_NE(r.err.find(offender), std::string::npos) << offender << " missing from: " << r.err;
  }
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one error line: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/programqpc.bin"));
#endif
}

}  // namespace
}  // namespace qaic::testing
