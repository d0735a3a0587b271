// SPDX-License-Identifier: Apache-2.0
// One generated ONNX backend node test (model.onnx + test_data_set_*/input_*.pb, output_*.pb),
// imported and run on the host executor.
#pragma once

#include <string>

namespace qaic::conformance {

struct NodeTestResult {
  bool passed = false;
  std::string message;  // why it failed
};

// ONNX feeds some operator parameters as graph inputs (Reshape's shape, Clip's bounds, Pad's
// pads and value, Dropout's ratio / training_mode). The static compiler needs them at import
// time, so the runner binds their test data as initializers before importing.
NodeTestResult runNodeTest(const std::string& caseDir, int threads = 1);

}  // namespace qaic::conformance
