// SPDX-License-Identifier: Apache-2.0
// parseGraph: JSON text -> Graph, enforcing every structural rule of the IR (seed 004,
// lightnet-ops.md "General rules", each op's params, the io section). Shape-dependent rules are
// left to inferShapes.
#include <fstream>
#include <set>
#include <sstream>

#include "ir/IoSection.hpp"
#include "ir/JsonFields.hpp"
#include "ir/OpError.hpp"
#include "ir/OpRegistry.hpp"

namespace qaic::ir {
namespace {

using namespace json_fields;

ParamValue parseParamValue(const Json& value, const Where& where) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>();
  if (!value.is_array()) fail(where, std::string("value: unsupported type ") + value.type_name());
  if (value.empty()) fail(where, "value: empty array");
  const Json& first = value.front();
  const auto sameKind = [&first](const Json& element) {
    return (first.is_number() && element.is_number()) || (first.is_string() && element.is_string()) ||
           (first.is_boolean() && element.is_boolean());
  };
  for (const Json& element : value) {
    if (!sameKind(element)) fail(where, "value: mixed or nested array");
  }
  if (first.is_number()) return value.get<std::vector<double>>();
  if (first.is_string()) return value.get<std::vector<std::string>>();
  return value.get<std::vector<bool>>();
}

std::vector<TensorArg> parseTensorList(const Json& opJson, std::string_view key, const Where& where) {
  std::vector<TensorArg> args;
  const Json& list = requireArray(opJson, key, where);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Where entry{where.text + ": " + std::string(key) + "[" + std::to_string(i) + "]", where.opName};
    requireObject(list[i], entry);
    rejectUnknownKeys(list[i], {"arg_name", "name"}, entry);
    args.push_back({requireString(list[i], "arg_name", entry), requireString(list[i], "name", entry)});
  }
  return args;
}

std::vector<Param> parseParams(const Json& opJson, const Where& where) {
  std::vector<Param> params;
  const Json& list = requireArray(opJson, "params", where);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Where entry{where.text + ": params[" + std::to_string(i) + "]", where.opName};
    requireObject(list[i], entry);
    rejectUnknownKeys(list[i], {"arg_name", "value"}, entry);
    std::string argName = requireString(list[i], "arg_name", entry);
    const Where valueWhere{entry.text + " '" + argName + "'", where.opName};
    params.push_back({argName, parseParamValue(requireKey(list[i], "value", entry), valueWhere)});
  }
  return params;
}

Op parseOp(const Json& opJson, std::size_t index, const std::string& source) {
  const Where indexWhere{source + ": ops[" + std::to_string(index) + "]", {}};
  requireObject(opJson, indexWhere);
  Op op;
  op.name = requireString(opJson, "name", indexWhere);
  op.optype = requireString(opJson, "optype", indexWhere);
  const Where where{source + ": op '" + op.name + "' (" + op.optype + ")", op.name};
  rejectUnknownKeys(opJson, {"name", "optype", "tensors_in", "tensors_out", "params"}, where);
  op.inputs = parseTensorList(opJson, "tensors_in", where);
  op.outputs = parseTensorList(opJson, "tensors_out", where);
  op.params = parseParams(opJson, where);
  return op;
}

class TensorTable {
 public:
  void define(const Op& op, const TensorArg& arg) {
    if (!defined_.insert(arg.name).second) {
      throwOpError(op, "output", arg.argName, "redefines tensor '" + arg.name + "'");
    }
  }
  void requireDefined(const Op& op, const TensorArg& arg) const {
    if (!defined_.contains(arg.name)) {
      throwOpError(op, "input", arg.argName,
                   "tensor '" + arg.name + "' is not defined by an earlier op or an io input");
    }
  }
  void defineInput(const std::string& name) { defined_.insert(name); }

 private:
  std::set<std::string> defined_;
};

void parseOps(const Json& ops, Graph& graph) {
  TensorTable tensors;
  for (const auto& buffer : graph.io) {
    if (buffer.direction == Direction::In) tensors.defineInput(buffer.tensor);
  }
  std::set<std::string> opNames;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Op op = parseOp(ops[i], i, graph.sourceName);
    try {
      if (!opNames.insert(op.name).second) throwOpError(op, "", "", "duplicate op name");
      validateOp(op);
      for (const auto& arg : op.inputs) tensors.requireDefined(op, arg);
      for (const auto& arg : op.outputs) tensors.define(op, arg);
    } catch (const IrError& e) {
      rethrowWithSource(e, graph.sourceName);
    }
    graph.ops.push_back(std::move(op));
  }
}

void checkIoOutputsProduced(const Graph& graph) {
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    const IoBuffer& buffer = graph.io[i];
    if (buffer.direction != Direction::Out) continue;
    bool produced = false;
    for (const auto& op : graph.ops) {
      for (const auto& arg : op.outputs) produced = produced || arg.name == buffer.tensor;
    }
    if (!produced) {
      fail({graph.sourceName + ": io[" + std::to_string(i) + "] '" + buffer.bufferName + "'", {}},
           "key 'tensor': output tensor '" + buffer.tensor + "' is not produced by any op");
    }
  }
}

}  // namespace

Graph parseGraph(std::string_view jsonText, std::string sourceName) {
  Graph graph;
  graph.sourceName = std::move(sourceName);
  Json root;
  try {
    root = Json::parse(jsonText);
  } catch (const Json::exception& e) {
    throw IrError(graph.sourceName + ": invalid JSON: " + e.what());
  }
  const Where where{graph.sourceName, {}};
  requireObject(root, where);
  rejectUnknownKeys(root, {"ops", "io", "allowed_shapes", "weights"}, where);
  const Json& ops = requireArray(root, "ops", where);
  if (const auto it = root.find("io"); it != root.end()) {
    graph.io = parseIoSection(*it, graph.sourceName);
  }
  parseOps(ops, graph);
  checkIoOutputsProduced(graph);
  if (const auto it = root.find("allowed_shapes"); it != root.end()) {
    graph.allowedShapes = parseAllowedShapes(*it, graph.io, graph.sourceName);
  }
  if (root.contains("weights")) graph.weightsFile = requireString(root, "weights", where);
  return graph;
}

void validateGraph(const Graph& graph) { parseGraph(toJson(graph), graph.sourceName); }

Graph loadGraph(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw IrError(path + ": cannot open IR file");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw IrError(path + ": read error");
  return parseGraph(text.str(), path);
}

}  // namespace qaic::ir
