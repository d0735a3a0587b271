// SPDX-License-Identifier: Apache-2.0
// Turns one ONNX graph into IR ops, node by node in the graph's (topological) order. Operator
// handlers (Convert*.cpp, FoldConstants.cpp) see the current node through this class and emit IR
// ops with it; shapes come from ir::inferShapes over the ops emitted so far, so the importer and
// the IR never disagree about a shape rule. (Inference re-runs whenever a handler asks for a
// tensor not yet inferred: quadratic in the op count, well under a second for the networks of
// docs/conformance.md.)
//
// A node whose inputs are all known at import time is evaluated: its handler emits its IR ops as
// usual, the converter runs them on the host executor (the kernels the device runs) and keeps
// the results as constants instead of the ops (ConstantEvaluation.cpp). That folds the shape
// arithmetic of exported networks (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) with no
// second implementation of any operator.
//
// Shapes are ONNX's: dims(i) may be empty (a scalar). The IR has no rank-0 params, so a scalar
// lives in an IR tensor of dims [1]; setOnnxDims records that a handler's result is a scalar.
//
// Every node that cannot be converted (unknown operator, unsupported attribute or value) is an
// offender; conversion goes on past it and the import fails with one error naming them all.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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

struct OperatorEntry;

ir::Param numberParam(std::string argName, double value);
ir::Param integersParam(std::string argName, const std::vector<int64_t>& values);
ir::Param numbersParam(std::string argName, const std::vector<double>& values);
ir::Param stringParam(std::string argName, std::string value);
ir::Param boolParam(std::string argName, bool value);

// Rank-0 dims become [1]: IR params never hold empty dims.
ir::Dims irDims(const ir::Dims& dims);
// The params of a `create` op of `dtype` and `dims`: from the weights, or zeros.
std::vector<ir::Param> createParams(ir::DType dtype, const ir::Dims& dims, bool fromFile);

class Converter;

// `axis` (attribute `attribute` of the current node) as a non-negative axis of a rank-`rank`
// tensor; negative axes count from the end. Fails naming the attribute when out of range.
int64_t normalizeAxis(const Converter& c, int64_t axis, std::size_t rank, const std::string& attribute = "axis");
// Each of `axes` normalized so, in the given order; fails "axes repeat" when two name one axis.
std::vector<int64_t> distinctAxes(const Converter& c, const std::vector<int64_t>& axes, std::size_t rank,
                                  const std::string& attribute = "axes");

class Converter {
 public:
  Converter(const ::onnx::ModelProto& model, const ImportOptions& options, std::string sourceName);
  const std::string& externalDataDir() const { return options_.externalDataDir; }
  ImportedModel run();

  // --- the node being converted ---
  const ::onnx::NodeProto& node() const { return *node_; }
  const std::string& label() const { return label_; }
  const NodeAttributes& attributes() const { return *attributes_; }
  int64_t opset() const { return opset_; }
  bool hasInput(std::size_t i) const;
  bool hasOutput(std::size_t i) const;
  std::size_t inputCount() const;
  std::size_t outputCount() const;
  // Data of input i when it is known at import time (initializer, Constant, folded), else null.
  const ImportedTensor* constant(std::size_t i) const;
  const ImportedTensor& requireConstant(std::size_t i, const std::string& role) const;
  // Input i's constant values as integers (axes, shapes, pads); fails naming `role` otherwise.
  std::vector<int64_t> constantIntegers(std::size_t i, const std::string& role) const;
  // The IR tensor of input i; a constant gets its `create` op (and weights entry) on first use.
  std::string tensor(std::size_t i);
  ir::Dims dims(std::size_t i);  // ONNX dims: empty for a scalar
  ir::DType dtype(std::size_t i);
  ir::Dims tensorDims(const std::string& irTensor);
  ir::DType tensorDType(const std::string& irTensor);
  // Input i's rank, requiring it to be one of the ranks given.
  void requireRank(std::size_t i, std::initializer_list<std::size_t> ranks);

  // --- emitting ---
  std::string output(std::size_t i);                         // IR tensor bound to ONNX output i
  void setOnnxDims(std::size_t outputIndex, ir::Dims dims);  // its ONNX dims differ (a scalar)
  // Element-wise operators: output i is a scalar when every input is one.
  void keepScalarOutput(std::size_t outputIndex);
  std::string temporary(const std::string& hint);  // a fresh intermediate IR tensor
  void emit(std::string optype, std::vector<ir::TensorArg> inputs, std::vector<ir::TensorArg> outputs,
            std::vector<ir::Param> params = {});
  // `src` reshaped into ONNX output i whose ONNX dims are `dims` (a scalar becomes [1]).
  void reshapeInto(std::size_t outputIndex, const std::string& src, const ir::Dims& dims);
  std::string reshaped(const std::string& src, const ir::Dims& dims, const std::string& hint);
  // Indices [from, to) of axis `axis` of `src` (the other axes whole), in a new tensor.
  std::string sliced(const std::string& src, std::size_t axis, int64_t from, int64_t to, const std::string& hint);
  void alias(std::size_t outputIndex, const std::string& irTensor);  // output i is that tensor
  void forward(std::size_t outputIndex, std::size_t inputIndex);     // output i is input j, constant or not
  void setConstant(std::size_t outputIndex, ImportedTensor value);   // output i folded
  // A new weights entry and its `create` op, named `name` (made unique). `computedAs`: the op's
  // element type when it differs from the stored one (a float16 weight the network reads as
  // float, widened once when a program is built).
  std::string constantTensor(ImportedTensor value, const std::string& name,
                             std::optional<ir::DType> computedAs = std::nullopt);
  std::string zeros(ir::DType dtype, const ir::Dims& dims, const std::string& hint);
  // A one-value constant of `dtype` ([1], broadcasting), named "<node label>/<name>".
  std::string scalar(ir::DType dtype, double value, const std::string& name);

  // --- looking ahead (batchnorm folding) ---
  // The node consuming `value` when it is exactly one node and `value` is not a graph output.
  const ::onnx::NodeProto* soleConsumer(const std::string& value) const;
  // Every node consuming `value`; none when `value` is a graph output (it must stay).
  std::vector<const ::onnx::NodeProto*> consumers(const std::string& value) const;
  const ImportedTensor* constantValue(const std::string& value) const;
  const std::string& tensorOf(const std::string& value) const;  // the IR tensor bound to an ONNX value
  void absorb(const ::onnx::NodeProto& consumer, const std::string& consumerOutput,
              const std::string& irTensor);  // `consumer` is done: its output is irTensor

  [[noreturn]] void fail(const std::string& problem) const;

 private:
  struct Value {
    std::string tensor;                              // IR tensor, empty until materialized
    std::shared_ptr<const ImportedTensor> constant;  // import-time data, if any
    std::optional<ir::Dims> onnxDims;                // when they differ from the IR tensor's
  };
  // The IR ops and weights a handler emitted, from their first index on (constant evaluation).
  struct Mark {
    std::size_t ops = 0;
    std::size_t weights = 0;
  };

  void readOpset();
  void bindInputs();
  void bindInitializers();
  void indexConsumers();
  // Every node of `graph` and of the graphs in its nodes' attributes (If's branches).
  static void forEachNode(const ::onnx::GraphProto& graph, const std::function<void(const ::onnx::NodeProto&)>& visit);
  void convertNodeOrBranch(const ::onnx::NodeProto& node, std::size_t index, int depth);
  void convertNode(const ::onnx::NodeProto& node, std::size_t index);
  // After the handler of a node whose inputs are all constant: runs its ops and, unless their
  // results are large, replaces them by the results (true).
  bool evaluateConstantNode(const Mark& mark, const std::map<std::string, Value>& savedInputs);
  void rollBack(const Mark& mark, const std::map<std::string, Value>& savedInputs);
  std::string unsupportedAttributes(const OperatorEntry& entry) const;
  void bindOutputs();
  void throwOffenders() const;
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
  std::map<std::string, std::shared_ptr<const ImportedTensor>> constantTensors_;  // IR tensor -> data
  std::map<const ImportedTensor*, std::string> materialized_;  // data -> its IR tensor (one per constant)
  std::set<std::string> reservedNames_;                        // every ONNX value name, so temporaries avoid them
  std::set<std::string> usedTensors_;
  std::set<std::string> usedOps_;
  std::set<std::string> usedLabels_;
  std::map<std::string, std::vector<const ::onnx::NodeProto*>> consumers_;
  std::set<std::string> graphOutputs_;
  std::set<const ::onnx::NodeProto*> absorbed_;
  std::set<std::string> inputTensors_;
  std::map<std::string, std::string> opOrigins_;  // IR op name -> "OpType node 'label'"

  std::vector<std::string> unsupportedOperators_;  // "OpType (node 'name')"
  std::vector<std::string> offenders_;             // every other node that failed, with why
  std::set<std::string> poisoned_;                 // outputs of offenders: consumers are skipped

  const ::onnx::NodeProto* node_ = nullptr;
  const OperatorEntry* entry_ = nullptr;
  std::string label_;
  std::unique_ptr<NodeAttributes> attributes_;
};

}  // namespace qaic::onnx
