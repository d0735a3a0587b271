// SPDX-License-Identifier: Apache-2.0
// qaic-exec -custom-IO-list-file: io buffers given to the user in another precision than the
// network computes in (the vendor's custom IO list, which efficient-transformers writes to keep a
// decoder's KV cache in float16). The network's float tensor is bound through a cast: an input
// buffer of the listed precision is cast to float where the network reads it, an output is cast
// from float after the network writes it.
#pragma once

#include <string>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::compiler {

struct CustomIoEntry {
  std::string name;       // IOName: the io buffer
  ir::DType precision{};  // Precision
  int line = 0;           // of IOName, for messages
};

// The file's entries: a YAML list whose items hold `IOName` and `Precision` (float16 / fp16,
// float / float32 / fp32), comments and blank lines aside. Throws CompileError naming the file
// and line for anything else, a repeated IOName or an unknown precision.
std::vector<CustomIoEntry> readCustomIoList(const std::string& path);

// Gives each listed float buffer its precision (the cast ops added, shapes re-inferred). Throws
// CompileError naming the file, line and buffer for an unknown buffer or one that is not float.
void applyCustomIo(ir::Graph& graph, const std::vector<CustomIoEntry>& entries, const std::string& path);

}  // namespace qaic::compiler
