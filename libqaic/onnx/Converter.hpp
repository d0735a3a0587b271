// Turns one ONNX graph into IR ops, node by node in the graph's (topological) order. Operator
// handlers (ConvertConvPool.cpp, ConvertMath.cpp, ConvertShape.cpp, FoldConstants.cpp) see the
// current node through this class and emit IR ops with it; shapes come from ir::inferShapes
// over the ops emitted so far, so the importer and the IR never disagree about a shape rule.
// (Inference re-runs whenever a handler asks for a tensor not yet inferred: quadratic in the op
// count, milliseconds for classification networks.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnx/NodeAttributes.hpp"
#include "onnx/OnnxImporter.hpp"

namespace onnx {
class ModelProto;
class GraphProto;
class NodeProto;
class ValueInfoProto;
}  // namespace onnx

namespace qaic::onnx {

ir::Param numberParam(std::string argName, double value);
ir::Param integersParam(std::string argName, const std::vector<int64_t>& values);
ir::Param stringParam(std::string argName, std::string value);
ir::Param boolParam(std::string argName, bool value);

class Converter {
 public:
  Converter(const ::onnx::ModelProto& model, const ImportOptions& options, std::string sourceName);
  ImportedModel run();

  // --- the node being converted ---
  const ::onnx::NodeProto& node() const { return *node_; }
  const std::string& label() const { return label_; }
  const NodeAttributes& attributes() const { return *attributes_; }
  int64_t opset() const { return opset_; }
  bool hasInput(std::size_t i) const;
  bool hasOutput(std::size_t i) const;
  // Data of input i when it is known at import time (initializer, Constant, folded), else null.
  const ImportedTensor* constant(std::size_t i) const;
  const ImportedTensor& requireConstant(std::size_t i, const std::string& role) const;
  // The IR tensor of input i; a constant gets its `create` op (and weights entry) on first use.
  std::string tensor(std::size_t i);
  ir::Dims dims(std::size_t i);
  ir::DType dtype(std::size_t i);
  ir::Dims tensorDims(const std::string& irTensor);
  // Input i's rank, requiring it to be one of the ranks given.
  void requireRank(std::size_t i, std::initializer_list<std::size_t> ranks);

  // --- emitting ---
  std::string output(std::size_t i);                  // IR tensor bound to ONNX output i
  std::string temporary(const std::string& hint);     // a fresh intermediate IR tensor
  void emit(std::string optype, std::vector<ir::TensorArg> inputs, std::vector<ir::TensorArg> outputs,
            std::vector<ir::Param> params = {});
  void alias(std::size_t outputIndex, const std::string& irTensor);  // output i is that tensor
  void setConstant(std::size_t outputIndex, ImportedTensor value);   // output i folded
  // A new weights entry and its `create` op, named `name` (made unique).
  std::string constantTensor(ImportedTensor value, const std::string& name);
  std::string zeros(ir::DType dtype, const ir::Dims& dims, const std::string& hint);

  // --- looking ahead (batchnorm folding) ---
  // The node consuming `value` when it is exactly one node and `value` is not a graph output.
  const ::onnx::NodeProto* soleConsumer(const std::string& value) const;
  const ImportedTensor* constantValue(const std::string& value) const;
  void absorb(const ::onnx::NodeProto& consumer, const std::string& consumerOutput,
              const std::string& irTensor);  // `consumer` is done: its output is irTensor

  [[noreturn]] void fail(const std::string& problem) const;

 private:
  struct Value {
    std::string tensor;                                 // IR tensor, empty until materialized
    std::shared_ptr<const ImportedTensor> constant;     // import-time data, if any
  };

  void readOpset();
  void checkSupported() const;
  void bindInputs();
  void bindInitializers();
  void indexConsumers();
  void convertNode(std::size_t index);
  void bindOutputs();
  ir::Dims resolveInputDims(const ::onnx::ValueInfoProto& input) const;
  Value& inputValue(std::size_t i);
  const Value* findInputValue(std::size_t i) const;
  std::string materialize(Value& value, const std::string& name);
  std::string uniqueTensorName(const std::string& wanted);
  std::string uniqueOpName(const std::string& wanted);
  void inferShapes();
  std::string irErrorOrigin(const ir::IrError& e) const;  // the ONNX node behind an IR op's error

  const ::onnx::ModelProto& model_;
  const ::onnx::GraphProto& graph_;
  const ImportOptions& options_;
  ImportedModel result_;
  int64_t opset_ = 0;

  std::map<std::string, Value> values_;
  std::set<std::string> reservedNames_;   // every ONNX value name, so temporaries avoid them
  std::set<std::string> usedTensors_;
  std::set<std::string> usedOps_;
  std::set<std::string> usedLabels_;
  std::map<std::string, std::vector<const ::onnx::NodeProto*>> consumers_;
  std::set<std::string> graphOutputs_;
  std::set<const ::onnx::NodeProto*> absorbed_;
  std::set<std::string> inputTensors_;
  std::map<std::string, std::string> opOrigins_;  // IR op name -> "OpType node 'label'"

  const ::onnx::NodeProto* node_ = nullptr;
  std::string label_;
  std::unique_ptr<NodeAttributes> attributes_;
};

}  // namespace qaic::onnx
