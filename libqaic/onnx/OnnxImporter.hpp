// SPDX-License-Identifier: Apache-2.0
// ONNX front end of the compiler: an ONNX model becomes the project's IR plus weight tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/Graph.hpp"
#include "ir/Weights.hpp"
#include "onnx/TensorBytes.hpp"

namespace qaic::onnx {

struct ImportedTensor {
  std::string name;
  ir::DType dtype = ir::DType::Float;
  ir::Dims dims;
  TensorBytes data;  // a view into the external data file's mapping, or owned
};

struct ImportedModel {
  ir::Graph graph;                      // with an io section for every graph input and output
  std::vector<ImportedTensor> weights;  // initializers that survived folding
};

struct ImportOptions {
  std::map<std::string, int64_t> symbols;  // -onnx-define-symbol=name,value for symbolic dims
  int64_t batchSize = 0;                   // > 0: replaces a symbolic or unit batch dimension
  // Where tensors stored as external data (`location` relative to it) are read from;
  // importOnnxFile sets it to the model file's directory. Empty: external data is refused.
  std::string externalDataDir;
};

// Unsupported operators are collected over the whole graph and reported in one error:
// unsupportedNodes() holds one "OpType (node 'name')" entry per offending node, in graph order.
class ImportError : public std::runtime_error {
 public:
  ImportError(std::string message, std::vector<std::string> unsupportedNodes = {})
      : std::runtime_error(std::move(message)), unsupported_(std::move(unsupportedNodes)) {}
  const std::vector<std::string>& unsupportedNodes() const noexcept { return unsupported_; }

 private:
  std::vector<std::string> unsupported_;
};

ImportedModel importOnnxFile(const std::string& path, const ImportOptions& options = {});
ImportedModel importOnnxBytes(std::span<const std::byte> bytes, const ImportOptions& options,
                              const std::string& sourceName);

// Views of model.weights for ir::writeWeightsFile or a kernels::ConstantLookup; they point into
// `model` and live as long as it does.
std::vector<ir::WeightTensor> weightTensors(const ImportedModel& model);

}  // namespace qaic::onnx
