// SPDX-License-Identifier: Apache-2.0
#include "runtime/loading/ProgramLayout.hpp"

#include <algorithm>

#include "driver/DeviceProtocol.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace qaic::rt {

std::size_t ProgramLayout::inputCount() const {
  return static_cast<std::size_t>(
      std::count_if(buffers.begin(), buffers.end(), [](const StagedBuffer& b) { return b.isInput; }));
}

std::size_t ProgramLayout::outputCount() const { return buffers.size() - inputCount(); }

ProgramLayout makeProgramLayout(const container::QpcImage& image, uint32_t programIndex,
                                std::vector<BufferShapeRules> rules) {
  const auto& programs = image.programs();
  if (programIndex >= programs.size())
    throw Error(QS_INCOMPATIBLE, image.sourceName() + ": no program " + std::to_string(programIndex) +
                                     " (the container has " + std::to_string(programs.size()) + ")");
  const container::QpcProgram& program = programs[programIndex];
  if (image.buffers().size() > driver::kMaxDescriptorBuffers)
    throw Error(QS_INCOMPATIBLE, image.sourceName() + ": " + std::to_string(image.buffers().size()) +
                                     " IO buffers exceed the descriptor's " +
                                     std::to_string(driver::kMaxDescriptorBuffers));
  if (rules.size() != image.buffers().size())
    throw Error(QS_INCOMPATIBLE, image.sourceName() + ": buffer mappings and IO descriptor differ");

  ProgramLayout layout;
  layout.programIndex = programIndex;
  layout.numCores = program.numCores;
  layout.doorbellAddress = program.doorbellAddress;
  layout.doneSemaphore = program.doneSemaphore;
  layout.requestDescriptorOffset = program.requestDescriptorOffset;
  layout.responseDescriptorOffset = program.responseDescriptorOffset;
  layout.rules = std::move(rules);

  // Request descriptor first in the input BO; response descriptor last in the output BO, so the
  // order in each BO follows the order of the request's elements.
  uint64_t inOffset = driver::kDescriptorBytes;
  uint64_t outOffset = 0;
  for (const container::QpcBuffer& buffer : image.buffers()) {
    StagedBuffer staged;
    staged.mappingIndex = buffer.index;
    staged.name = buffer.io.bufferName;
    staged.isInput = buffer.io.direction == ir::Direction::In;
    staged.userType = buffer.io.dtype;
    staged.userLayout = buffer.io.userLayout;
    staged.deviceFormat = buffer.io.deviceFormat;
    staged.deviceOffset = buffer.deviceOffset;
    staged.deviceSize = buffer.deviceSize;
    uint64_t& offset = staged.isInput ? inOffset : outOffset;
    staged.stagingOffset = offset;
    offset += driver::alignUp(std::max<uint64_t>(buffer.deviceSize, 1), driver::kPageSize);
    layout.buffers.push_back(std::move(staged));
  }
  layout.requestDescriptorStaging = 0;
  layout.inputStagingBytes = inOffset;
  layout.responseDescriptorStaging = outOffset;
  layout.outputStagingBytes = outOffset + driver::kDescriptorBytes;
  layout.elementsPerRequest = static_cast<uint32_t>(layout.buffers.size() + 2);
  return layout;
}

ir::Dims toIrDims(const IoDims& dims) { return ir::Dims(dims.begin(), dims.end()); }

uint64_t userBytes(const StagedBuffer& buffer, const IoDims& dims) {
  return kernels::userBufferBytes(toIrDims(dims), buffer.userType);
}

uint64_t deviceBytes(const StagedBuffer& buffer, const IoDims& dims) {
  return kernels::deviceBufferBytes(toIrDims(dims), buffer.deviceFormat);
}

}  // namespace qaic::rt
