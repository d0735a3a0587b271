// SPDX-License-Identifier: Apache-2.0
#include "runtime/loading/QpcMappings.hpp"

#include "container/QpcModel.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace qaic::rt {

BufferMapping toBufferMapping(const container::QpcBuffer& buffer) {
  return BufferMapping(buffer.io.bufferName, buffer.index,
                       buffer.io.direction == ir::Direction::In ? BUFFER_IO_TYPE_INPUT : BUFFER_IO_TYPE_OUTPUT,
                       buffer.size, buffer.io.isPartialAllowed, buffer.dataType);
}

BufferMapping toDmaBufferMapping(const container::QpcBuffer& buffer) {
  return BufferMapping(buffer.io.bufferName, buffer.index,
                       buffer.io.direction == ir::Direction::In ? BUFFER_IO_TYPE_INPUT : BUFFER_IO_TYPE_OUTPUT,
                       kernels::deviceBufferBytes(buffer.io.dims, buffer.io.deviceFormat), buffer.io.isPartialAllowed,
                       container::bufferDataTypeFor(buffer.io.deviceFormat.elementType));
}

BufferMappings toDmaBufferMappings(const container::QpcImage& image) {
  BufferMappings mappings;
  mappings.reserve(image.buffers().size());
  for (const auto& buffer : image.buffers()) mappings.push_back(toDmaBufferMapping(buffer));
  return mappings;
}

BufferMappings toBufferMappings(const container::QpcImage& image) {
  BufferMappings mappings;
  mappings.reserve(image.buffers().size());
  for (const auto& buffer : image.buffers()) mappings.push_back(toBufferMapping(buffer));
  return mappings;
}

v2::BufferMappings toBufferMappingsV2(const container::QpcImage& image) {
  const auto combinations = image.allShapeCombinations();
  v2::BufferMappings mappings;
  mappings.reserve(image.buffers().size());
  for (const auto& buffer : image.buffers()) {
    v2::IoShapes shapes;
    shapes.defaultDims = buffer.io.dims;
    for (const auto& combination : combinations) shapes.allowedDims.push_back(combination[buffer.index]);
    v2::BufferMapping mapping(toBufferMapping(buffer), std::move(shapes));
    mapping.skipPartialHeader = buffer.io.skipPartialHeader;
    mapping.allowSkip = buffer.io.allowSkip;
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

QpcInfo toQpcInfo(const container::QpcImage& image) {
  QpcInfo info;
  for (const auto& program : image.programs()) {
    QpcProgramInfo p;
    for (auto index : program.bufferIndices) p.bufferMappings.push_back(toBufferMapping(image.buffers()[index]));
    for (auto index : program.bufferIndices) p.bufferMappingsDma.push_back(toDmaBufferMapping(image.buffers()[index]));
    p.name = program.name;
    p.numCores = program.numCores;
    p.programIndex = program.programIndex;
    p.size = program.payload.size();
    p.batchSize = program.batchSize;
    p.numSemaphores = program.numSemaphores;
    p.numMcIds = program.numMulticastIds;
    p.totalRequiredMemory = program.totalRequiredMemory;
    p.fp16Constants = (program.flags & container::kProgramFlagFp16Constants) != 0;
    info.program.push_back(std::move(p));
  }
  for (const auto& constant : image.constants()) {
    info.constants.push_back({constant.tensor.name, constant.index, constant.tensor.data.size()});
  }
  for (const auto& state : image.retainedState()) info.retainedState.push_back(state.name);
  info.numDevices = static_cast<uint32_t>(image.deviceCount());
  return info;
}

}  // namespace qaic::rt
