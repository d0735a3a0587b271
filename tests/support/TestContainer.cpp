#include "TestContainer.hpp"

#include <string>

#include "container/QpcWriter.hpp"

namespace qaic::emu::test {

ReluContainer makeReluContainer(uint32_t numCores) {
  ReluContainer c;
  c.numCores = numCores;
  ir::Graph g;
  ir::Op relu;
  relu.name = "relu0";
  relu.optype = "relu";
  relu.inputs = {{"src", "x"}};
  relu.outputs = {{"dst", "y"}};
  g.ops.push_back(relu);
  ir::IoBuffer x;
  x.bufferName = "x";
  x.tensor = "x";
  x.direction = ir::Direction::In;
  x.dims = c.dims;
  x.deviceFormat = c.inFormat;
  ir::IoBuffer y = x;
  y.bufferName = "y";
  y.tensor = "y";
  y.direction = ir::Direction::Out;
  y.deviceFormat = c.outFormat;
  g.io = {x, y};
  const std::string payload = ir::toJson(g);

  container::QpcContents contents;
  container::QpcBuffer bx;
  bx.index = 0;
  bx.io = x;
  bx.size = 32 * 4;
  bx.dataType = container::bufferDataTypeFor(ir::DType::Float);
  bx.deviceOffset = c.inOffset;
  bx.deviceSize = c.inSize;
  container::QpcBuffer by = bx;
  by.index = 1;
  by.io = y;
  by.deviceOffset = c.outOffset;
  by.deviceSize = c.outSize;
  contents.buffers = {bx, by};
  container::QpcProgram p;
  p.name = "relu";
  p.programIndex = 0;
  p.numCores = numCores;
  p.numSemaphores = 1;
  p.doneSemaphore = c.doneSemaphore;
  p.ioRegionSize = c.ioRegionSize;
  p.totalRequiredMemory = c.ioRegionSize;
  p.doorbellAddress = c.doorbell;
  p.requestDescriptorOffset = 0;
  p.responseDescriptorOffset = 4096;
  p.bufferIndices = {0, 1};
  p.payload = std::span<const std::byte>(reinterpret_cast<const std::byte*>(payload.data()),
                                         payload.size());
  contents.programs = {p};
  c.bytes = container::serializeQpc(contents);
  return c;
}

}  // namespace qaic::emu::test
