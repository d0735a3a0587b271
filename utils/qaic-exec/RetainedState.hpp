// SPDX-License-Identifier: Apache-2.0
// qaic-exec -retained-state: which io buffers of a network are retained state. An output
// `<X>_RetainedState` pairs with the input `<X>`; the pair becomes one buffer of device memory
// per activation (container::QpcRetainedState), left out of the IO descriptor.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "container/QpcModel.hpp"
#include "ir/Graph.hpp"

namespace qaic::compiler {

inline constexpr std::string_view kRetainedStateSuffix = "_RetainedState";

struct RetainedPair {
  std::size_t input = 0;   // index into graph.io
  std::size_t output = 0;  // index into graph.io
};

// Every `<X>_RetainedState` output with its input `<X>`. Throws CompileError naming both buffers
// when the input is missing or differs in dtype or dims.
std::vector<RetainedPair> findRetainedPairs(const ir::Graph& graph);

// The container entry of a pair.
container::QpcRetainedState retainedEntry(const ir::Graph& graph, const RetainedPair& pair);

}  // namespace qaic::compiler
