// Real torchvision models (random weights, exported by scripts/gen-models.py at test time):
// imported, run on the host executor in fp32 and compared with PyTorch's own output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

#include "GeneratedData.hpp"
#include "HostRun.hpp"
#include "onnx/OnnxTensor.hpp"

namespace qaic::conformance {
namespace {

std::string modelDir() { return buildDir() + "/tests/conformance/models"; }

onnx::ImportedTensor rawFloats(const std::string& path, ir::Dims dims) {
  const std::string bytes = onnx::readFileBounded(path, std::size_t{64} << 20);
  onnx::ImportedTensor t{path, ir::DType::Float, std::move(dims), {}};
  if (bytes.size() != static_cast<std::size_t>(ir::elementCount(t.dims)) * sizeof(float)) {
    throw std::runtime_error(path + ": unexpected size " + std::to_string(bytes.size()));
  }
  t.data.resize(bytes.size());
  std::memcpy(t.data.data(), bytes.data(), bytes.size());
  return t;
}

std::vector<float> floats(const onnx::ImportedTensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

class TorchvisionModels : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchvisionModels, MatchPyTorchOnHostExecutor) {
  ensureGenerated("gen-models.py", modelDir(), "index.txt", std::chrono::seconds(280));
  const std::string base = modelDir() + "/" + GetParam();
  const onnx::ImportedModel model = onnx::importOnnxFile(base + ".onnx");
  ASSERT_EQ(model.graph.io.size(), 2u);
  EXPECT_EQ(model.graph.io[0].dims, (ir::Dims{1, 3, 224, 224}));
  EXPECT_EQ(model.graph.io[1].dims, (ir::Dims{1, 1000}));

  const auto input = rawFloats(base + ".input.bin", {1, 3, 224, 224});
  const auto expected = floats(rawFloats(base + ".output.bin", {1, 1000}));
  HostRun program(model, 2);
  const auto outputs = program.run({&input});
  ASSERT_EQ(outputs.size(), 1u);
  const auto got = floats(outputs[0]);
  ASSERT_EQ(got.size(), expected.size());

  double maxRef = 0, maxErr = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    maxRef = std::max(maxRef, std::abs(static_cast<double>(expected[i])));
    maxErr = std::max(maxErr, std::abs(static_cast<double>(got[i]) - expected[i]));
  }
  ASSERT_GT(maxRef, 0.0);
  EXPECT_LE(maxErr, 1e-4 * maxRef) << GetParam() << ": max abs error " << maxErr << ", max |output| " << maxRef;
  std::cout << GetParam() << ": max abs error " << maxErr << ", max |output| " << maxRef << "\n";
  RecordProperty("max_abs_error", std::to_string(maxErr));
}

INSTANTIATE_TEST_SUITE_P(Torchvision, TorchvisionModels,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
