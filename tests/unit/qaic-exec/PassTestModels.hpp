// SPDX-License-Identifier: Apache-2.0
// Small networks for the pass tests, built in memory: what a pass gets from the passes before it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "Compilation.hpp"
#include "IrGraphs.hpp"

namespace qaic::compiler::testing {

// x [rows, 4] -> relu -> y, and z [1, 4] + constant b [1, 4] (the weights' `bias`) -> w.
// `rows` plays the symbol a specialization binds.
inline std::string twoPathJson(int64_t rows) {
  const std::string r = std::to_string(rows);
  return R"({"io": [
      {"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [)" +
         r + R"(, 4]},
      {"name": "z", "tensor": "z", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 4]},
      {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [)" +
         r + R"(, 4]},
      {"name": "w", "tensor": "w", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 4]}],
    "ops": [
      {"name": "act", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
       "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []},
      {"name": "bias", "optype": "create", "tensors_in": [],
       "tensors_out": [{"arg_name": "dst", "name": "b"}],
       "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": [1, 4]},
                  {"arg_name": "data", "value": [0]}, {"arg_name": "ran", "value": [0, 0]},
                  {"arg_name": "from_file", "value": true}]},
      {"name": "add", "optype": "elew",
       "tensors_in": [{"arg_name": "src1", "name": "z"}, {"arg_name": "src2", "name": "b"}],
       "tensors_out": [{"arg_name": "dst", "name": "w"}],
       "params": [{"arg_name": "elew_op", "value": "TL_SUM"}]}]})";
}

// x [rows, 4] -> relu -> y, and the retained pair cache [1, 4] -> relu -> cache_RetainedState.
inline std::string retainedJson(int64_t rows, int64_t cacheLength = 4) {
  const std::string r = std::to_string(rows), c = std::to_string(cacheLength);
  return R"({"io": [
      {"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [)" +
         r + R"(, 4]},
      {"name": "cache", "tensor": "c", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, )" +
         c + R"(]},
      {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [)" +
         r + R"(, 4]},
      {"name": "cache_RetainedState", "tensor": "s", "direction": "out", "dtype": "TL_FLOAT",
       "dims": [1, )" +
         c + R"(]}],
    "ops": [
      {"name": "act", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
       "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []},
      {"name": "keep", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "c"}],
       "tensors_out": [{"arg_name": "dst", "name": "s"}], "params": []}]})";
}

inline ir::Graph inferredGraph(const std::string& json) {
  ir::Graph graph = ir::parseGraph(json, "net.json");
  ir::inferShapes(graph);
  return graph;
}

// A loaded model whose weights hold the tensor b [1, 4] = `bias` (owned by the model).
inline LoadedModel loadedModel(ir::Graph graph, std::vector<float> bias = {1, 2, 3, 4}) {
  auto values = std::make_shared<std::vector<float>>(std::move(bias));
  LoadedModel model;
  model.graph = std::move(graph);
  model.weights.push_back({"b", ir::DType::Float, {1, 4}, std::as_bytes(std::span(*values))});
  model.owner = values;
  return model;
}

inline LoadedModel retainedModel(int64_t rows, int64_t cacheLength = 4) {
  return loadedModel(inferredGraph(retainedJson(rows, cacheLength)));
}

inline LoadedModel twoPathModel(int64_t rows, std::vector<float> bias = {1, 2, 3, 4}) {
  return loadedModel(inferredGraph(twoPathJson(rows)), std::move(bias));
}

inline Variant variantOf(ir::Graph graph) {
  Variant variant;
  variant.model.graph = std::move(graph);
  return variant;
}

}  // namespace qaic::compiler::testing
