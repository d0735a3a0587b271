// SPDX-License-Identifier: Apache-2.0
// The PyTorch model suite (ModelSuite.hpp) on the host executor: imported, run in fp32 with two
// threads and compared with PyTorch's outputs, max |got - torch| <= 1e-4 * max |torch|.
// DeviceModelTest.cpp runs the same models through qaic-exec, qaic-runner and qaic-emu.
#include <gtest/gtest.h>

#include <iostream>

#include "HostRun.hpp"
#include "ModelSuite.hpp"

namespace qaic::conformance {
namespace {

class PyTorchModels : public ::testing::TestWithParam<std::string> {};

TEST_P(PyTorchModels, MatchPyTorchOnHostExecutor) {
  const SuiteModel model = loadSuiteModel(GetParam());
  const onnx::ImportedModel imported = onnx::importOnnxFile(model.onnxPath);
  std::vector<const onnx::ImportedTensor*> inputs;
  for (const auto& input : model.inputs) inputs.push_back(&input.value);
  HostRun program(imported, 2);
  const auto outputs = program.run(inputs);
  ASSERT_EQ(outputs.size(), model.outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string problem = compareWithTorch(outputs[i], model.outputs[i].value,
                                                 "output '" + model.outputs[i].name + "'");
    EXPECT_EQ(problem, "") << GetParam() << " (opset " << model.opset << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, PyTorchModels, ::testing::ValuesIn(suiteModels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
