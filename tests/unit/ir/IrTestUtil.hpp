// SPDX-License-Identifier: Apache-2.0
// Builders for IR JSON in tests, and a helper that returns the IrError message of a failure.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::ir::test {

using Json = nlohmann::json;
using Pairs = std::vector<std::pair<std::string, std::string>>;
using Params = std::vector<std::pair<std::string, Json>>;

inline Json makeOp(const std::string& name, const std::string& optype, const Pairs& ins, const Pairs& outs,
                   const Params& params) {
  Json op{{"name", name},
          {"optype", optype},
          {"tensors_in", Json::array()},
          {"tensors_out", Json::array()},
          {"params", Json::array()}};
  for (const auto& [arg, tensor] : ins) op["tensors_in"].push_back({{"arg_name", arg}, {"name", tensor}});
  for (const auto& [arg, tensor] : outs) op["tensors_out"].push_back({{"arg_name", arg}, {"name", tensor}});
  for (const auto& [arg, value] : params) op["params"].push_back({{"arg_name", arg}, {"value", value}});
  return op;
}

// A `create` op named "make_<tensor>" filling `tensor` with zeros.
inline Json makeTensor(const std::string& tensor, const Dims& dims, const std::string& dtype = "TL_FLOAT") {
  return makeOp("make_" + tensor, "create", {}, {{"dst", tensor}},
                {{"dtype", dtype}, {"dims", dims}, {"ran", {0, 0}}, {"data", {0}}, {"from_file", false}});
}

inline std::string graphText(const std::vector<Json>& ops, const Json& extra = Json::object()) {
  Json root = extra;
  root["ops"] = ops;
  return root.dump();
}

// Parses (and, if `infer`, infers shapes); returns the IrError message, or "" on success.
inline std::string irErrorText(const std::string& text, bool infer = true) {
  try {
    Graph graph = parseGraph(text, "test.json");
    if (infer) inferShapes(graph);
  } catch (const IrError& e) {
    return e.what();
  }
  return "";
}

inline std::string irError(const std::vector<Json>& ops, bool infer = true) {
  return irErrorText(graphText(ops), infer);
}

// Inputs as `create` ops, then the op under test; returns the inferred infos of its outputs.
inline Graph inferWith(const std::vector<std::pair<std::string, Dims>>& inputs, const Json& op,
                       const std::string& dtype = "TL_FLOAT") {
  std::vector<Json> ops;
  for (const auto& [name, dims] : inputs) ops.push_back(makeTensor(name, dims, dtype));
  ops.push_back(op);
  Graph graph = parseGraph(graphText(ops), "test.json");
  inferShapes(graph);
  return graph;
}

}  // namespace qaic::ir::test
