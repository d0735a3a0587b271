// SPDX-License-Identifier: Apache-2.0
// qaic-exec and qaic-util on the project's example network (examples/smallcnn).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "ContainerFiles.hpp"
#include "DeviceData.hpp"
#include "IrGraphs.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "TestModels.hpp"

namespace qaic::testing {
namespace {

std::string smallcnn() { return (qaic::testing::sourceDir() / "examples/smallcnn/smallcnn.json").string(); }

TEST(SmallCnn, ConstantsAreTheWeightsFileTensors) {
  TempDir dir("smallcnn");
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + smallcnn(), "-aic-binary-dir=" + out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto image = container::QpcImage::open(out + "/programqpc.bin");
  const auto weights = ir::WeightsFile::open(
      (qaic::testing::sourceDir() / "examples/smallcnn/smallcnn.weights.bin").string());
  ASSERT_EQ(image->constants().size(), 4u);
  for (const auto& constant : image->constants()) {
    const ir::WeightTensor* w = weights->find(constant.tensor.name);
    ASSERT_NE(w, nullptr) << constant.tensor.name;
    EXPECT_EQ(constant.tensor.dtype, w->dtype);
    ASSERT_EQ(constant.tensor.data.size(), w->data.size());
    EXPECT_TRUE(std::equal(w->data.begin(), w->data.end(), constant.tensor.data.begin())) << constant.tensor.name;
  }
  const auto& input = image->buffers()[0];
  EXPECT_EQ(input.io.bufferName, "image");
  EXPECT_EQ(input.io.deviceFormat.layout, ir::DeviceLayout::DWHC);
  EXPECT_EQ(input.deviceSize, 4096u);  // 768 FP16 elements
  EXPECT_EQ(image->buffers()[1].io.dims, (ir::Dims{1, 10}));

  const auto util = runTool("qaic-util", {"--qpc", out});
  ASSERT_EQ(util.exitCode, 0) << util.err;
  EXPECT_NE(util.out.find("\n\tName:smallcnn\n"), std::string::npos) << util.out;
  EXPECT_NE(util.out.find("\n\tDevice Format:DWHC TL_FLOAT16\n"), std::string::npos) << util.out;
  EXPECT_NE(util.out.find("\n\t0 (default): image[1,3,16,16] probs[1,10]\n"), std::string::npos) << util.out;
}

TEST(SmallCnn, ConvertToFp16HalvesTheConstants) {
  TempDir dir("smallcnn16");
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + smallcnn(), "-aic-binary-dir=" + out, "-convert-to-fp16"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto image = container::QpcImage::open(out + "/programqpc.bin");
  const auto weights = ir::WeightsFile::open(
      (qaic::testing::sourceDir() / "examples/smallcnn/smallcnn.weights.bin").string());
  EXPECT_EQ(image->programs()[0].flags & container::kProgramFlagFp16Constants, container::kProgramFlagFp16Constants);
  for (const auto& constant : image->constants()) {
    const ir::WeightTensor* w = weights->find(constant.tensor.name);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(constant.tensor.dtype, ir::DType::Float16);
    ASSERT_EQ(constant.tensor.data.size() * 2, w->data.size());
    float first;
    uint16_t half;
    std::memcpy(&first, w->data.data(), sizeof first);
    std::memcpy(&half, constant.tensor.data.data(), sizeof half);
    EXPECT_EQ(half, kernels::floatToHalf(first)) << constant.tensor.name;
  }
}

TEST(SmallCnn, BatchSizeThatBreaksAFixedReshapeIsABadInput) {
  TempDir dir("smallcnn-b2");
  const std::string out = (dir.path() / "out").string();
  const auto r = runTool("qaic-exec", {"-m=" + smallcnn(), "-aic-binary-dir=" + out, "-batchsize=2"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("op 'flatten1'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/programqpc.bin"));
}

}  // namespace
}  // namespace qaic::testing
