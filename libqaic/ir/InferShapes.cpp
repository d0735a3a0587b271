// SPDX-License-Identifier: Apache-2.0
// Shape inference: runs each op's registry shape rule in order, after the rank-dependent
// parameter lengths that parsing could not check.
#include "ir/OpError.hpp"
#include "ir/OpRegistry.hpp"

namespace qaic::ir {
namespace {

using TensorMap = std::map<std::string, TensorInfo>;

void checkRankLengths(const Op& op, const OpSpec& spec, std::size_t rank) {
  for (const ParamSpec& ps : spec.params) {
    std::size_t expected = 0;
    if (ps.lengthRule == LengthRule::Rank) {
      expected = rank;
    } else if (ps.lengthRule == LengthRule::TwiceRank) {
      expected = 2 * rank;
    } else {
      continue;
    }
    const std::size_t length = op.numbers(ps.argName).size();
    if (length != expected) {
      throwParamError(op, ps.argName,
                      "expected " + std::to_string(expected) + " elements for a rank-" + std::to_string(rank) +
                          " src, got " + std::to_string(length));
    }
  }
}

void inferOp(const Op& op, TensorMap& tensors) {
  // Graphs built in memory (the ONNX importer) reach here without parseGraph.
  const OpSpec* spec = &validateOp(op);
  std::vector<TensorInfo> inputs;
  for (std::string_view argName : spec->inputs) {
    const TensorArg* arg = op.findInput(argName);
    if (arg == nullptr) throwInputError(op, argName, "missing");
    const auto it = tensors.find(arg->name);
    if (it == tensors.end()) {
      throwInputError(op, argName, "tensor '" + arg->name + "' is not defined");
    }
    inputs.push_back(it->second);
  }
  if (!inputs.empty()) checkRankLengths(op, *spec, inputs[0].dims.size());
  const std::vector<TensorInfo> outputs = spec->shape(op, inputs);
  for (std::size_t i = 0; i < spec->outputs.size() && i < outputs.size(); ++i) {
    const TensorInfo& info = outputs[i];
    if (info.dims.size() > kMaxRank) {
      throwOpError(op, "output", spec->outputs[i],
                   "rank " + std::to_string(info.dims.size()) + " exceeds " + std::to_string(kMaxRank));
    }
    try {
      elementCount(info.dims);
    } catch (const IrError& e) {
      throwOpError(op, "output", spec->outputs[i], e.what());
    }
    const TensorArg* arg = op.findOutput(spec->outputs[i]);
    if (arg == nullptr) throwOpError(op, "output", spec->outputs[i], "missing");
    tensors[arg->name] = info;
  }
}

void checkOutputs(const Graph& graph, const ShapeCombination& ioDims, const TensorMap& tensors,
                  const std::string& where) {
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    const IoBuffer& buffer = graph.io[i];
    if (buffer.direction != Direction::Out) continue;
    const auto it = tensors.find(buffer.tensor);
    if (it == tensors.end()) {
      throw IrError(where + "io '" + buffer.bufferName + "': tensor '" + buffer.tensor + "' is not produced");
    }
    if (it->second.dtype != buffer.dtype) {
      throw IrError(where + "io '" + buffer.bufferName + "': dtype " + std::string(dtypeName(buffer.dtype)) +
                    " != inferred " + std::string(dtypeName(it->second.dtype)));
    }
    if (!ioDims[i].empty() && it->second.dims != ioDims[i]) {
      throw IrError(where + "io '" + buffer.bufferName + "': dims " + formatDims(ioDims[i]) + " != inferred " +
                    formatDims(it->second.dims));
    }
  }
}

// `label` starts every message: the source name, plus the allowed_shapes entry when checking one.
TensorMap inferLabelled(const Graph& graph, const ShapeCombination& ioDims, const std::string& label) {
  const std::string prefix = label + ": ";
  if (ioDims.size() != graph.io.size()) {
    throw IrError(prefix + "expected dims for " + std::to_string(graph.io.size()) + " io buffers, got " +
                  std::to_string(ioDims.size()));
  }
  TensorMap tensors;
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    const IoBuffer& buffer = graph.io[i];
    if (buffer.direction == Direction::In) {
      if (ioDims[i].size() != buffer.dims.size()) {
        throw IrError(prefix + "io '" + buffer.bufferName + "': rank of " + formatDims(ioDims[i]) + " != io rank " +
                      std::to_string(buffer.dims.size()));
      }
      tensors[buffer.tensor] = TensorInfo{buffer.dtype, ioDims[i]};
    }
  }
  for (const Op& op : graph.ops) {
    try {
      inferOp(op, tensors);
    } catch (const IrError& e) {
      rethrowWithSource(e, label);
    }
  }
  checkOutputs(graph, ioDims, tensors, prefix);
  return tensors;
}

}  // namespace

std::map<std::string, TensorInfo> inferTensorShapes(const Graph& graph, const ShapeCombination& ioDims) {
  return inferLabelled(graph, ioDims, graph.sourceName);
}

void inferShapes(Graph& graph) {
  ShapeCombination full;
  for (const auto& buffer : graph.io) full.push_back(buffer.dims);
  graph.tensors = inferTensorShapes(graph, full);
  for (std::size_t i = 0; i < graph.allowedShapes.size(); ++i) {
    inferLabelled(graph, graph.allowedShapes[i], graph.sourceName + ": allowed_shapes[" + std::to_string(i) + "]");
  }
}

}  // namespace qaic::ir
