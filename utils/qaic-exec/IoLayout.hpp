// SPDX-License-Identifier: Apache-2.0
// The IO region of a program (docs/device-protocol.md section 4): request descriptor at 0,
// response descriptor at 4096, the doorbell word's page at 8192, then every io buffer in its
// device format, each 4 KiB aligned.
#pragma once

#include <cstdint>
#include <vector>

#include "container/QpcModel.hpp"
#include "ir/Graph.hpp"

namespace qaic::compiler {

inline constexpr uint64_t kRequestDescriptorOffset = 0;
inline constexpr uint64_t kResponseDescriptorOffset = 4096;
inline constexpr uint64_t kDoorbellAddress = 8192;
inline constexpr uint64_t kFirstBufferOffset = 12288;
// A response descriptor (16 + 44 bytes per buffer) must fit its 4 KiB page.
inline constexpr std::size_t kMaxIoBuffers = (4096 - 16) / 44;

struct IoLayout {
  std::vector<container::QpcBuffer> buffers;
  uint64_t ioRegionSize = 0;
};

// Throws CompileError when the graph has more io buffers than a descriptor can describe.
// io buffers whose `retained` entry is true (retained state) get no place in the descriptor; the
// others are numbered in io order.
IoLayout layoutIo(const ir::Graph& graph, const std::vector<bool>& retained = {});

}  // namespace qaic::compiler
