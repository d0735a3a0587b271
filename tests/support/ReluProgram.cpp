// SPDX-License-Identifier: Apache-2.0
#include "ReluProgram.hpp"

#include <string>

#include "container/QpcWriter.hpp"

namespace qaic::testing {

ReluProgram makeReluProgram(uint32_t numCores, ir::Dims dims, ir::DeviceFormat inFormat) {
  ReluProgram relu;
  relu.dims = std::move(dims);
  relu.inFormat = inFormat;
  relu.numCores = numCores;
  ir::Graph graph;
  ir::Op op;
  op.name = "relu0";
  op.optype = "relu";
  op.inputs = {{"src", "x"}};
  op.outputs = {{"dst", "y"}};
  graph.ops.push_back(op);
  ir::IoBuffer x;
  x.bufferName = "x";
  x.tensor = "x";
  x.direction = ir::Direction::In;
  x.dims = relu.dims;
  x.deviceFormat = relu.inFormat;
  ir::IoBuffer y = x;
  y.bufferName = "y";
  y.tensor = "y";
  y.direction = ir::Direction::Out;
  y.deviceFormat = relu.outFormat;
  graph.io = {x, y};
  graph.sourceName = "relu-test";
  ir::inferShapes(graph);
  const std::string json = ir::toJson(graph);

  container::QpcContents contents;
  container::QpcBuffer in;
  in.index = 0;
  in.io = x;
  in.size = static_cast<uint64_t>(ir::elementCount(relu.dims)) * sizeof(float);
  in.dataType = rt::BUFFER_DATA_TYPE_FLOAT;
  in.deviceOffset = relu.inOffset;
  in.deviceSize = relu.inSize;
  container::QpcBuffer out = in;
  out.index = 1;
  out.io = y;
  out.deviceOffset = relu.outOffset;
  out.deviceSize = relu.outSize;
  contents.buffers = {in, out};

  container::QpcProgram program;
  program.name = "relu";
  program.numCores = numCores;
  program.numSemaphores = 1;
  program.doneSemaphore = relu.doneSemaphore;
  program.totalRequiredMemory = relu.ioRegionSize;
  program.ioRegionSize = relu.ioRegionSize;
  program.doorbellAddress = relu.doorbell;
  program.requestDescriptorOffset = 0;
  program.responseDescriptorOffset = 4096;
  program.bufferIndices = {0, 1};
  program.payload = std::as_bytes(std::span(json.data(), json.size()));
  contents.programs = {program};
  relu.bytes = container::serializeQpc(contents);
  return relu;
}

std::vector<std::byte> reluProgram(uint32_t numCores) { return makeReluProgram(numCores).bytes; }

}  // namespace qaic::testing
