// SPDX-License-Identifier: Apache-2.0
// specialization-io: one program serves every specialization through one IO descriptor, so each
// specialization has specialization 0's io buffers, in its order, differing in dims only.
#include "CompileError.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void specializationIoPass(const Compilation& compilation, Variant& variant) {
  if (compilation.variants.empty()) return;  // this is specialization 0
  const ir::Graph& first = compilation.variants.front().graph;
  const ir::Graph& graph = variant.model.graph;
  if (graph.io.size() != first.io.size()) {
    std::string message = "has " + std::to_string(graph.io.size()) + " io buffers, ";
    message += "specialization 0 has " + std::to_string(first.io.size());
    throw CompileError(message);
  }
  for (std::size_t b = 0; b < graph.io.size(); ++b) {
    const ir::IoBuffer &io = graph.io[b], &ref = first.io[b];
    if (io.bufferName != ref.bufferName || io.direction != ref.direction || io.dtype != ref.dtype ||
        io.dims.size() != ref.dims.size() || io.deviceFormat.layout != ref.deviceFormat.layout ||
        io.deviceFormat.elementType != ref.deviceFormat.elementType) {
      std::string message = "buffer '" + io.bufferName + "' differs from specialization 0's '";
      message += ref.bufferName + "' in name, direction, dtype, rank or device format";
      throw CompileError(message);
    }
  }
}

}  // namespace qaic::compiler
