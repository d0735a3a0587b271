#include "Fp16IoFormats.hpp"

#include <algorithm>
#include <string_view>

namespace qaic::compiler {

namespace {

// The convolution block of seed 003: operators that read their "src" as channels over space.
bool readAsImageBy(const ir::Graph& graph, const std::string& tensor) {
  return std::any_of(graph.ops.begin(), graph.ops.end(), [&](const ir::Op& op) {
    if (op.optype != "conv2d" && op.optype != "deconv2d") return false;
    const ir::TensorArg* src = op.findInput("src");
    return src != nullptr && src->name == tensor;
  });
}

bool declaredByTheNetwork(const ir::IoBuffer& io) {
  return io.deviceFormat.layout != ir::DeviceLayout::Flat || io.deviceFormat.elementType != io.dtype;
}

}  // namespace

void chooseFp16IoFormats(ir::Graph& graph, Fp16IoLayout layout) {
  if (layout == Fp16IoLayout::Flat) return;
  const ir::DeviceLayout image = layout == Fp16IoLayout::DHWC ? ir::DeviceLayout::DHWC : ir::DeviceLayout::DWHC;
  for (ir::IoBuffer& io : graph.io) {
    if (io.dtype != ir::DType::Float || declaredByTheNetwork(io)) continue;
    const bool rank4 = io.dims.size() == 4;
    if (io.direction == ir::Direction::In) {
      io.deviceFormat = {rank4 && readAsImageBy(graph, io.tensor) ? image : ir::DeviceLayout::Flat, ir::DType::Float16};
    } else {
      io.deviceFormat = {rank4 ? image : ir::DeviceLayout::Flat, ir::DType::Float};
    }
  }
}

}  // namespace qaic::compiler
