// SPDX-License-Identifier: Apache-2.0
// batch-size: -batchsize=B replaces dim 0 of every io buffer, and of each allowed shape
// combination that had the buffer's original dim 0 there (before shapes are inferred).
#include "passes/Passes.hpp"

namespace qaic::compiler {

void batchSizePass(const Compilation& compilation, Variant& variant) {
  const int64_t batch = compilation.options.batchSize;
  if (batch <= 0) return;
  ir::Graph& graph = variant.model.graph;
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    const int64_t original = graph.io[i].dims[0];
    graph.io[i].dims[0] = batch;
    for (auto& combination : graph.allowedShapes) {
      if (!combination[i].empty() && combination[i][0] == original) combination[i][0] = batch;
    }
  }
}

}  // namespace qaic::compiler
