// SPDX-License-Identifier: Apache-2.0
// What the compiler's graph rewrites (custom IO, cast placement) share when they add ops: names
// that nothing in the graph uses yet, and the cast op.
#pragma once

#include <string>

#include "ir/Graph.hpp"

namespace qaic::compiler {

// `wanted`, or `wanted_1`, `wanted_2`, ... : the first no tensor of the (shape-inferred) graph has.
std::string uniqueTensorName(const ir::Graph& graph, const std::string& wanted);
// The same among the graph's op names.
std::string uniqueOpName(const ir::Graph& graph, const std::string& wanted);

ir::Op castOp(const std::string& name, const std::string& src, const std::string& dst, ir::DType to);

}  // namespace qaic::compiler
