// SPDX-License-Identifier: Apache-2.0
// Loads the network a compile starts from: a JSON IR plus its weights side file, or an ONNX
// model through the importer (when it is built).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.hpp"
#include "ir/Weights.hpp"

namespace qaic::compiler {

struct LoadedModel {
  ir::Graph graph;
  std::vector<ir::WeightTensor> weights;  // views into `owner`
  std::shared_ptr<const void> owner;      // the mapped weights file or the imported model
};

struct LoadOptions {
  int64_t batchSize = 0;
  std::map<std::string, int64_t> onnxSymbols;
};

// Throws ir::IrError, CompileError (ONNX support not built, weights missing) or the importer's
// onnx::ImportError.
LoadedModel loadModel(const std::string& path, const LoadOptions& options);

}  // namespace qaic::compiler
