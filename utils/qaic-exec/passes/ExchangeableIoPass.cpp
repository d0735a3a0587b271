// SPDX-License-Identifier: Apache-2.0
// exchangeable-io: every io buffer's element type must be one the runtime converts to and from
// the device; otherwise the program would compile and fail at its first inference.
#include "CompileError.hpp"
#include "kernels/format/DeviceFormat.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void exchangeableIoPass(const Compilation&, Variant& variant) {
  const ir::Graph& graph = variant.model.graph;
  for (const ir::IoBuffer& io : graph.io) {
    if (kernels::isUserType(io.dtype)) continue;
    const char* direction = io.direction == ir::Direction::In ? "input" : "output";
    throw CompileError(graph.sourceName + ": " + direction + " '" + io.bufferName + "' is " +
                       std::string(ir::dtypeName(io.dtype)) +
                       ", which the runtime does not exchange (float, float16, int8, uint8, int16, "
                       "uint16, int32, int64 and bool); cast it to one of them in the model");
  }
}

}  // namespace qaic::compiler
