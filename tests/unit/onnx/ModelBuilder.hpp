// SPDX-License-Identifier: Apache-2.0
// Builds small ONNX models in memory for the importer's unit tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/OnnxImporter.hpp"

namespace qaic::onnx::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13);

  // A dim of 0 becomes the symbolic dim named by the next entry of `symbols`.
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& symbols = {}, int32_t elemType = ::onnx::TensorProto::FLOAT);
  ModelBuilder& output(const std::string& name);
  ModelBuilder& initializer(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values);
  ModelBuilder& initializerInt64(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& values);
  ::onnx::NodeProto& node(const std::string& opType, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "");

  ::onnx::ModelProto& model() { return model_; }
  std::string bytes() const;
  ImportedModel import(const ImportOptions& options = {}) const;

 private:
  ::onnx::ModelProto model_;
};

// The ImportError's message of importing `b`, or "<no error>".
std::string importError(const ModelBuilder& b, const ImportOptions& options = {});

void setAttr(::onnx::NodeProto& node, const std::string& name, int64_t value);
void setAttr(::onnx::NodeProto& node, const std::string& name, float value);
void setAttr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void setAttr(::onnx::NodeProto& node, const std::string& name, const std::string& value);

// Lookups in an imported graph.
const ir::Op* findOp(const ir::Graph& graph, const std::string& optype, std::size_t nth = 0);
std::size_t countOps(const ir::Graph& graph, const std::string& optype);
std::vector<double> numbersOf(const ir::Op& op, const std::string& argName);
const ImportedTensor* findWeight(const ImportedModel& model, const std::string& name);
std::vector<float> floatsOf(const ImportedTensor& tensor);

}  // namespace qaic::onnx::test
