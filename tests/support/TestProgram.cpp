#include "TestProgram.hpp"

#include "container/QpcWriter.hpp"
#include "ir/Graph.hpp"

namespace qaic::emu::test {

std::vector<std::byte> reluProgram(uint32_t numCores) {
  const ir::Dims dims = {1, static_cast<int64_t>(kReluElements)};
  ir::Graph graph;
  ir::Op relu;
  relu.name = "relu0";
  relu.optype = "relu";
  relu.inputs = {{"src", "x"}};
  relu.outputs = {{"dst", "y"}};
  graph.ops.push_back(relu);
  ir::IoBuffer in;
  in.bufferName = "x";
  in.tensor = "x";
  in.direction = ir::Direction::In;
  in.dims = dims;
  ir::IoBuffer out = in;
  out.bufferName = "y";
  out.tensor = "y";
  out.direction = ir::Direction::Out;
  graph.io = {in, out};
  graph.sourceName = "relu-test";
  ir::inferShapes(graph);
  const std::string json = ir::toJson(graph);

  container::QpcContents contents;
  const uint64_t userBytes = kReluElements * sizeof(float);
  container::QpcBuffer x;
  x.index = 0;
  x.io = in;
  x.size = userBytes;
  x.dataType = rt::BUFFER_DATA_TYPE_FLOAT;
  x.deviceOffset = kReluInputOffset;
  x.deviceSize = 4096;
  container::QpcBuffer y = x;
  y.index = 1;
  y.io = out;
  y.deviceOffset = kReluOutputOffset;
  contents.buffers = {x, y};

  container::QpcProgram program;
  program.name = "relu";
  program.numCores = numCores;
  program.numSemaphores = 1;
  program.doneSemaphore = 0;
  program.totalRequiredMemory = kReluIoRegion;
  program.ioRegionSize = kReluIoRegion;
  program.doorbellAddress = kReluDoorbell;
  program.requestDescriptorOffset = 0;
  program.responseDescriptorOffset = 4096;
  program.bufferIndices = {0, 1};
  program.payload = std::as_bytes(std::span(json.data(), json.size()));
  contents.programs = {program};
  return container::serializeQpc(contents);
}

}  // namespace qaic::emu::test
