// SPDX-License-Identifier: Apache-2.0
#include "RetainedState.hpp"

#include "CompileError.hpp"
#include "ir/OpError.hpp"

namespace qaic::compiler {
namespace {

std::string describe(const ir::IoBuffer& io) {
  return std::string(ir::dtypeName(io.dtype)) + " " + ir::formatDims(io.dims);
}

}  // namespace

std::vector<RetainedPair> findRetainedPairs(const ir::Graph& graph) {
  std::vector<RetainedPair> pairs;
  for (std::size_t out = 0; out < graph.io.size(); ++out) {
    const ir::IoBuffer& state = graph.io[out];
    const std::string& name = state.bufferName;
    if (state.direction != ir::Direction::Out || name.size() <= kRetainedStateSuffix.size() ||
        name.compare(name.size() - kRetainedStateSuffix.size(), kRetainedStateSuffix.size(), kRetainedStateSuffix) != 0)
      continue;
    const std::string inputName = name.substr(0, name.size() - kRetainedStateSuffix.size());
    std::size_t in = graph.io.size();
    for (std::size_t i = 0; i < graph.io.size(); ++i) {
      if (graph.io[i].direction == ir::Direction::In && graph.io[i].bufferName == inputName) in = i;
    }
    if (in == graph.io.size()) {
      throw CompileError(graph.sourceName + ": -retained-state: output '" + name + "' has no input '" + inputName +
                         "' to retain");
    }
    const ir::IoBuffer& input = graph.io[in];
    if (input.dtype != state.dtype || input.dims != state.dims) {
      throw CompileError(graph.sourceName + ": -retained-state: input '" + inputName + "' (" + describe(input) +
                         ") and output '" + name + "' (" + describe(state) +
                         ") differ; a retained pair needs one "
                         "dtype and one shape");
    }
    if (input.isPartialAllowed || state.isPartialAllowed || input.allowSkip) {
      throw CompileError(graph.sourceName + ": -retained-state: input '" + inputName + "' and output '" + name +
                         "': retained state cannot be partial or skipped");
    }
    pairs.push_back({in, out});
  }
  return pairs;
}

container::QpcRetainedState retainedEntry(const ir::Graph& graph, const RetainedPair& pair) {
  const ir::IoBuffer& in = graph.io[pair.input];
  const ir::IoBuffer& out = graph.io[pair.output];
  container::QpcRetainedState entry;
  entry.name = in.bufferName;
  entry.stateName = out.bufferName;
  entry.tensor = in.tensor;
  entry.stateTensor = out.tensor;
  entry.dtype = in.dtype;
  entry.dims = in.dims;
  entry.size = static_cast<uint64_t>(ir::elementCount(in.dims)) * ir::dtypeSize(in.dtype);
  return entry;
}

}  // namespace qaic::compiler
