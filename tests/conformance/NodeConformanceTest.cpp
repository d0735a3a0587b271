// ONNX backend node tests (python3-onnx 1.12's generated cases) for every operator the importer
// claims, imported and run on the host executor. Generated into the build tree on first use.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>

#include "GeneratedData.hpp"
#include "NodeTestCase.hpp"

namespace qaic::conformance {
namespace {

// Cases the stack cannot run, with the reason; docs/conformance.md lists the same. An excluded
// case that starts passing fails the suite, so this list only shrinks.
const std::map<std::string, std::string>& exclusions() {
  static const std::map<std::string, std::string> excluded = {
      {"test_averagepool_3d_default", "3-D pooling: the IR has only 2-D pooling (1-D runs as 2-D)"},
      {"test_maxpool_3d_default", "3-D pooling: the IR has only 2-D pooling (1-D runs as 2-D)"},
      {"test_maxpool_2d_dilations", "maxpool2d has no dilation parameter"},
      {"test_maxpool_2d_uint8", "the host executor's maxpool2d computes float only"},
      {"test_maxpool_with_argmax_2d_precomputed_pads", "the Indices output of MaxPool is not supported"},
      {"test_maxpool_with_argmax_2d_precomputed_strides", "the Indices output of MaxPool is not supported"},
      {"test_batchnorm_epsilon_training_mode", "training-mode BatchNormalization (inference only)"},
      {"test_batchnorm_example_training_mode", "training-mode BatchNormalization (inference only)"},
      {"test_training_dropout", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_default", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_default_mask", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_mask", "training-mode Dropout is random (inference only)"},
      {"test_reshape_allowzero_reordered", "produces an empty (zero-element) tensor; IR dims are >= 1"},
  };
  return excluded;
}

std::string nodeTestDir() { return buildDir() + "/tests/conformance/onnx-node"; }

std::vector<std::string> generatedCases() {
  ensureGenerated("gen-onnx-node-tests.py", nodeTestDir(), "index.txt", std::chrono::seconds(240));
  std::ifstream index(nodeTestDir() + "/index.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(index, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

class OnnxNodeTests : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTests, PassOnHostExecutor) {
  const std::string& op = GetParam();
  int passed = 0, excluded = 0;
  for (const auto& name : generatedCases()) {
    const std::string dir = nodeTestDir() + "/" + name;
    if (nodeTestOperator(dir) != op) continue;
    const NodeTestResult result = runNodeTest(dir);
    const auto exclusion = exclusions().find(name);
    if (exclusion != exclusions().end()) {
      ++excluded;
      EXPECT_FALSE(result.passed) << name << " passes now; remove it from the exclusion list (" << exclusion->second
                                  << ")";
      continue;
    }
    EXPECT_TRUE(result.passed) << name << ": " << result.message;
    passed += result.passed;
  }
  EXPECT_GT(passed + excluded, 0) << "no generated node test exercises " << op;
  std::cout << "conformance: " << op << " passed " << passed << ", excluded " << excluded << "\n";
  RecordProperty("passed", passed);
  RecordProperty("excluded", excluded);
}

INSTANTIATE_TEST_SUITE_P(Operators, OnnxNodeTests,
                         ::testing::Values("Conv", "Relu", "Clip", "MaxPool", "AveragePool", "GlobalAveragePool",
                                           "Gemm", "MatMul", "Add", "Mul", "Concat", "Flatten", "Reshape",
                                           "Transpose", "Softmax", "BatchNormalization", "Sigmoid", "LeakyRelu",
                                           "Dropout", "Identity", "Pad"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
