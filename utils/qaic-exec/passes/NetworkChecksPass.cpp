// SPDX-License-Identifier: Apache-2.0
// network-checks: what the device cannot run at all, refused before any shape work. Operators
// the registry marks host-only write to the console or to files, and the device has neither; a
// network without an io section gives the device nothing to exchange.
#include "CompileError.hpp"
#include "ir/OpRegistry.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void networkChecksPass(const Compilation&, Variant& variant) {
  const ir::Graph& graph = variant.model.graph;
  for (const ir::Op& op : graph.ops) {
    const ir::OpSpec* spec = ir::findOpSpec(op.optype);
    if (spec != nullptr && spec->hostOnly) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': optype '" + op.optype +
                         "' is host-only and cannot run on the device (remove it or run the IR "
                         "with lightnet)");
    }
  }
  if (graph.io.empty()) {
    throw CompileError(graph.sourceName +
                       ": the network has no \"io\" section; the device needs its inputs and "
                       "outputs declared");
  }
}

}  // namespace qaic::compiler
