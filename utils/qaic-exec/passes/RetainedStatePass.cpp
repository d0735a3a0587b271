// SPDX-License-Identifier: Apache-2.0
// retained-state: with -retained-state, the `<X>_RetainedState` pairs (RetainedState.hpp), the
// same pairs of one shape in every specialization. Their buffers keep their values in their own
// type (never converted on the device) and leave the IO descriptor for the container's
// retained-state entries.
#include "CompileError.hpp"
#include "ir/OpError.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void retainedStatePass(Compilation& compilation) {
  std::vector<LoadedModel>& variants = compilation.variants;
  const ir::Graph& first = variants.front().graph;
  compilation.retained.assign(first.io.size(), false);
  if (!compilation.options.retainedState) return;
  const std::vector<RetainedPair> pairs = findRetainedPairs(first);
  for (std::size_t v = 0; v < variants.size(); ++v) {
    ir::Graph& graph = variants[v].graph;
    if (v > 0) findRetainedPairs(graph);  // the same checks in this specialization (0's made above)
    for (const auto& pair : pairs) {
      const ir::IoBuffer& input = graph.io[pair.input];
      const ir::Dims& firstDims = first.io[pair.input].dims;
      if (input.dims == firstDims) continue;
      std::string message = compilation.options.model + ": -retained-state: '" + input.bufferName;
      message += "' is " + ir::formatDims(input.dims) + " in specialization " + std::to_string(v);
      message += " but " + ir::formatDims(firstDims) + " in specialization 0";
      throw CompileError(message + "; retained state has one shape");
    }
    for (const auto& pair : pairs) {
      for (std::size_t i : {pair.input, pair.output})
        graph.io[i].deviceFormat = {ir::DeviceLayout::Flat, graph.io[i].dtype};
    }
  }
  for (const auto& pair : pairs) {
    compilation.retained[pair.input] = true;
    compilation.retained[pair.output] = true;
  }
  const ir::Graph& program = variants[compilation.mainVariant].graph;
  for (const auto& pair : pairs) {
    compilation.contents.retainedState.push_back(retainedEntry(program, pair));
  }
}

}  // namespace qaic::compiler
