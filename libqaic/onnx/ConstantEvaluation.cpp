// SPDX-License-Identifier: Apache-2.0
// Import-time evaluation of nodes whose inputs are all constant: the ops their handler emitted
// run on the host executor (kernels::HostProgram), the same kernels the device runs, and their
// results replace them. Shape arithmetic of exported networks folds this way, and so does any
// other constant subgraph small enough to keep as a weight.
#include <onnx/onnx_pb.h>

#include <cstring>

#include "kernels/HostProgram.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"

namespace qaic::onnx {
namespace {

// Results up to this size always fold; larger ones fold only when they are no larger than the
// constants they come from (an Expand of a small mask stays an op rather than a big weight).
constexpr std::size_t kAlwaysFoldedBytes = std::size_t{64} << 10;

std::size_t bytesOf(const ir::TensorInfo& info) {
  return static_cast<std::size_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
}

}  // namespace

bool Converter::evaluateConstantNode(const Mark& mark, const std::map<std::string, Value>& savedInputs) {
  struct Result {
    std::size_t index;
    std::string tensor;
    std::optional<ir::Dims> onnxDims;
  };
  std::vector<Result> results;
  for (std::size_t i = 0; i < outputCount(); ++i) {
    if (!hasOutput(i)) continue;
    const Value& value = values_.at(node_->output(static_cast<int>(i)));
    if (value.tensor.empty()) continue;  // set as a constant by the handler itself
    results.push_back({i, value.tensor, value.onnxDims});
  }
  if (results.empty()) return false;

  ir::Graph graph;
  graph.sourceName = result_.graph.sourceName + ": import-time evaluation of " + node_->op_type() + " node '" + label_ +
                     "'";
  std::set<std::string> defined;
  for (std::size_t i = mark.ops; i < result_.graph.ops.size(); ++i) {
    for (const auto& out : result_.graph.ops[i].outputs) defined.insert(out.name);
  }
  std::map<std::string, ir::WeightTensor, std::less<>> weights;
  std::size_t inputBytes = 0;
  // Constants materialized by earlier nodes enter the evaluated graph as `create` ops of their own.
  const auto addConstant = [&](const std::string& name) {
    if (defined.count(name)) return;
    const auto it = constantTensors_.find(name);
    if (it == constantTensors_.end()) fail("internal: import-time evaluation reads '" + name + "', not a constant");
    const ImportedTensor& data = *it->second;
    ir::Op create;
    create.name = "create/" + name;
    create.optype = "create";
    create.outputs = {{"dst", name}};
    create.params = createParams(data.dtype, irDims(data.dims), true);
    graph.ops.push_back(std::move(create));
    weights[name] = {name, data.dtype, irDims(data.dims), data.data};
    inputBytes += data.data.size();
    defined.insert(name);
  };
  for (std::size_t i = mark.ops; i < result_.graph.ops.size(); ++i) {
    for (const auto& in : result_.graph.ops[i].inputs) addConstant(in.name);
  }
  for (const auto& r : results) addConstant(r.tensor);
  for (std::size_t i = mark.ops; i < result_.graph.ops.size(); ++i) graph.ops.push_back(result_.graph.ops[i]);
  for (std::size_t i = mark.weights; i < result_.weights.size(); ++i) {
    const ImportedTensor& w = result_.weights[i];
    weights[w.name] = {w.name, w.dtype, w.dims, w.data};
    inputBytes += w.data.size();
  }

  ir::inferShapes(graph);
  std::size_t outputBytes = 0;
  for (const auto& r : results) outputBytes += bytesOf(graph.tensors.at(r.tensor));
  if (outputBytes > kMaxFoldedBytes || (outputBytes > kAlwaysFoldedBytes && outputBytes > inputBytes)) return false;
  for (const auto& r : results) {
    const ir::TensorInfo& info = graph.tensors.at(r.tensor);
    ir::IoBuffer io;
    io.bufferName = r.tensor;
    io.tensor = r.tensor;
    io.direction = ir::Direction::Out;
    io.dtype = info.dtype;
    io.dims = info.dims;
    graph.io.push_back(std::move(io));
  }

  std::vector<ImportedTensor> values;
  try {
    auto program = kernels::HostProgram::build(graph, [&weights](std::string_view name) -> const ir::WeightTensor* {
      const auto it = weights.find(name);
      return it == weights.end() ? nullptr : &it->second;
    });
    std::vector<kernels::TensorView> views;
    for (const auto& r : results) {
      const ir::TensorInfo& info = graph.tensors.at(r.tensor);
      ImportedTensor value{"", info.dtype, r.onnxDims.value_or(info.dims), std::vector<std::byte>(bytesOf(info))};
      values.push_back(std::move(value));
    }
    for (auto& v : values) views.push_back({v.dtype, irDims(v.dims), v.data.mutableData(), v.data.size()});
    program->run({}, views);
  } catch (const kernels::ExecutionError& e) {
    fail(std::string("evaluating it at import time (its inputs are constant) failed: ") + e.what());
  }
  rollBack(mark, savedInputs);
  for (std::size_t k = 0; k < results.size(); ++k) setConstant(results[k].index, std::move(values[k]));
  return true;
}

}  // namespace qaic::onnx
