// SPDX-License-Identifier: Apache-2.0
#include "IoLayout.hpp"

#include "CompileError.hpp"

namespace qaic::compiler {

namespace {

uint64_t alignPage(uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

}  // namespace

IoLayout layoutIo(const ir::Graph& graph, const std::vector<bool>& retained) {
  IoLayout layout;
  uint64_t offset = kFirstBufferOffset;
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    if (i < retained.size() && retained[i]) continue;
    const ir::IoBuffer& io = graph.io[i];
    const auto elements = static_cast<uint64_t>(ir::elementCount(io.dims));
    container::QpcBuffer buffer;
    buffer.index = static_cast<uint32_t>(layout.buffers.size());
    buffer.io = io;
    buffer.size = elements * ir::dtypeSize(io.dtype);
    buffer.dataType = container::bufferDataTypeFor(io.dtype);
    // Seed 003's layouts permute elements without padding, so the device bytes are the
    // element count times the device element size.
    const uint64_t deviceBytes = elements * ir::dtypeSize(io.deviceFormat.elementType);
    buffer.deviceOffset = offset;
    buffer.deviceSize = alignPage(deviceBytes == 0 ? 1 : deviceBytes);
    offset += buffer.deviceSize;
    layout.buffers.push_back(std::move(buffer));
  }
  if (layout.buffers.size() > kMaxIoBuffers) {
    throw CompileError(graph.sourceName + ": " + std::to_string(layout.buffers.size()) +
                       " io buffers, a request descriptor describes at most " + std::to_string(kMaxIoBuffers));
  }
  layout.ioRegionSize = offset;
  return layout;
}

}  // namespace qaic::compiler
