// SPDX-License-Identifier: Apache-2.0
#include "GraphEdits.hpp"

#include <algorithm>

namespace qaic::compiler {

std::string uniqueTensorName(const ir::Graph& graph, const std::string& wanted) {
  std::string name = wanted;
  for (int k = 1; graph.tensors.count(name) != 0; ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

std::string uniqueOpName(const ir::Graph& graph, const std::string& wanted) {
  const auto taken = [&](const std::string& name) {
    return std::any_of(graph.ops.begin(), graph.ops.end(), [&](const ir::Op& op) { return op.name == name; });
  };
  std::string name = wanted;
  for (int k = 1; taken(name); ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

ir::Op castOp(const std::string& name, const std::string& src, const std::string& dst, ir::DType to) {
  ir::Op op;
  op.name = name;
  op.optype = "cast";
  op.inputs = {{"src", src}};
  op.outputs = {{"dst", dst}};
  op.params = {{"dtype", std::string(ir::dtypeName(to))}};
  return op;
}

}  // namespace qaic::compiler
