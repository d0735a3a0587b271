// SPDX-License-Identifier: Apache-2.0
#include "Fp16IoFormats.hpp"

#include <set>
#include <string_view>

#include "kernels/format/DeviceFormat.hpp"

namespace qaic::compiler {

namespace {

bool isConvolution(const ir::Op& op) { return op.optype == "conv2d" || op.optype == "deconv2d"; }

// Ops whose dst holds the elements of their src in the same row-major order: the Reshape the
// importer inserts around a 1-D convolution, Flatten.
bool isShapeOnly(const ir::Op& op) { return op.optype == "reshape" || op.optype == "flatten"; }

const ir::Dims* dimsOf(const ir::Graph& graph, const std::string& tensor) {
  const auto it = graph.tensors.find(tensor);
  return it == graph.tensors.end() ? nullptr : &it->second.dims;
}

// Whether a buffer of `bufferDims` holds, element for element, the channels over space of the
// convolution's [N, C, H, W] `imageDims` under the format library's geometry (a rank-3 [N, C, L]
// is [N, C, 1, L]; with one spatial axis of size 1, L as H is the same device buffer).
bool sameChannelsOverSpace(const ir::Dims& bufferDims, const ir::Dims& imageDims) {
  if (bufferDims.empty() || bufferDims.size() > 4 || imageDims.size() != 4) return false;
  const kernels::DeviceGeometry buffer = kernels::deviceGeometry(bufferDims, ir::DeviceLayout::DWHC);
  const kernels::DeviceGeometry image = kernels::deviceGeometry(imageDims, ir::DeviceLayout::DWHC);
  if (buffer.depth != image.depth || buffer.channels != image.channels) return false;
  if (buffer.height == image.height && buffer.width == image.width) return true;
  return buffer.height == 1 && image.width == 1 && image.height == buffer.width;
}

// The convolution block of seed 003: the input is read as `src` by a convolution, directly or
// through shape-only ops, as the same channels over space.
bool readAsImageBy(const ir::Graph& graph, const std::string& input, const ir::Dims& dims) {
  std::vector<std::string> pending = {input};
  std::set<std::string> seen = {input};
  while (!pending.empty()) {
    const std::string tensor = pending.back();
    pending.pop_back();
    for (const ir::Op& op : graph.ops) {
      const ir::TensorArg* src = op.findInput("src");
      if (src == nullptr || src->name != tensor) continue;
      if (isConvolution(op)) {
        if (const ir::Dims* image = dimsOf(graph, tensor); image && sameChannelsOverSpace(dims, *image)) return true;
      } else if (isShapeOnly(op)) {
        for (const ir::TensorArg& dst : op.outputs) {
          if (seen.insert(dst.name).second) pending.push_back(dst.name);
        }
      }
    }
  }
  return false;
}

// An output of rank 1-3 is image-like when a convolution's dst reaches it through shape-only ops.
bool producedAsImageBy(const ir::Graph& graph, const std::string& output, const ir::Dims& dims) {
  std::string tensor = output;
  for (std::size_t steps = 0; steps <= graph.ops.size(); ++steps) {
    const ir::Op* producer = nullptr;
    for (const ir::Op& op : graph.ops) {
      for (const ir::TensorArg& dst : op.outputs) {
        if (dst.name == tensor) producer = &op;
      }
    }
    if (producer == nullptr) return false;
    if (isConvolution(*producer)) {
      const ir::Dims* image = dimsOf(graph, tensor);
      return image != nullptr && sameChannelsOverSpace(dims, *image);
    }
    const ir::TensorArg* src = producer->findInput("src");
    if (!isShapeOnly(*producer) || src == nullptr) return false;
    tensor = src->name;
  }
  return false;
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
    if (io.direction == ir::Direction::In) {
      const bool imageLike = io.dims.size() <= 4 && readAsImageBy(graph, io.tensor, io.dims);
      io.deviceFormat = {imageLike ? image : ir::DeviceLayout::Flat, ir::DType::Float16};
    } else {
      const bool imageLike = io.dims.size() == 4 ||
                             (!io.dims.empty() && io.dims.size() < 4 && producedAsImageBy(graph, io.tensor, io.dims));
      io.deviceFormat = {imageLike ? image : ir::DeviceLayout::Flat, ir::DType::Float};
    }
  }
}

}  // namespace qaic::compiler
