// SPDX-License-Identifier: Apache-2.0
// Gather, GatherElements, GatherND, ScatterElements, ScatterND: indices are runtime data (token
// ids, positions) as often as constants, so they run on the device.
#include <onnx/onnx_pb.h>

#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

void requireIndexType(Converter& c, std::size_t i) {
  const ir::DType type = c.dtype(i);
  if (type != ir::DType::Int64 && type != ir::DType::Int32) {
    c.fail("indices must be int64 or int32, not " + std::string(ir::dtypeName(type)));
  }
}

}  // namespace

void convertGather(Converter& c) {
  if (!c.hasInput(1)) c.fail("input 1 (indices) is missing");
  const ir::Dims data = c.dims(0);
  const ir::Dims indices = c.dims(1);
  if (data.empty()) c.fail("data must have rank >= 1");
  requireIndexType(c, 1);
  const auto axis = static_cast<std::size_t>(normalizeAxis(c, c.attributes().integer("axis", 0), data.size()));
  ir::Dims out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
  if (out.size() > ir::kMaxRank) c.fail("the result has more than " + std::to_string(ir::kMaxRank) + " dims");
  const std::vector<ir::Param> params = {numberParam("axis", static_cast<double>(axis))};
  if (!indices.empty()) {
    c.emit("gather", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}}, {{"dst", c.output(0)}}, params);
    return;
  }
  // A scalar index drops the axis: the IR gathers with indices [1], then reshapes.
  const std::string gathered = c.temporary("gathered");
  c.emit("gather", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}}, {{"dst", gathered}}, params);
  c.reshapeInto(0, gathered, out);
}

}  // namespace qaic::onnx

namespace qaic::onnx {
namespace {

std::string reductionOf(Converter& c) {
  const std::string reduction = c.attributes().string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    c.attributes().fail("reduction", "is '" + reduction + "'; expected none, add, mul, max or min");
  }
  return reduction;
}

}  // namespace

void convertGatherElements(Converter& c) {
  const ir::Dims data = c.dims(0);
  if (data.empty()) c.fail("data must have rank >= 1");
  requireIndexType(c, 1);
  const auto axis = normalizeAxis(c, c.attributes().integer("axis", 0), data.size());
  c.emit("gather_elements", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}}, {{"dst", c.output(0)}},
         {numberParam("axis", static_cast<double>(axis))});
}

void convertGatherND(Converter& c) {
  requireIndexType(c, 1);
  const int64_t batch = c.attributes().integer("batch_dims", 0);
  if (batch < 0) c.attributes().fail("batch_dims", "must be >= 0");
  const ir::Dims data = c.dims(0), indices = c.dims(1);
  if (indices.empty() || data.empty()) c.fail("data and indices must have rank >= 1");
  ir::Dims out(indices.begin(), indices.end() - 1);
  const int64_t used = batch + indices.back();
  if (used > static_cast<int64_t>(data.size())) c.fail("indices select more dims than data has");
  out.insert(out.end(), data.begin() + used, data.end());
  c.emit("gather_nd", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}}, {{"dst", c.output(0)}},
         {numberParam("batch_dims", static_cast<double>(batch))});
}

// ScatterElements, and Scatter (its name before opset 11).
void convertScatterElements(Converter& c) {
  const ir::Dims data = c.dims(0);
  if (data.empty()) c.fail("data must have rank >= 1");
  requireIndexType(c, 1);
  if (c.dtype(2) != c.dtype(0)) c.fail("updates differ from data in element type");
  const auto axis = normalizeAxis(c, c.attributes().integer("axis", 0), data.size());
  c.emit("scatter_elements", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}, {"updates", c.tensor(2)}},
         {{"dst", c.output(0)}},
         {numberParam("axis", static_cast<double>(axis)), stringParam("reduction", reductionOf(c))});
}

void convertScatterND(Converter& c) {
  requireIndexType(c, 1);
  if (c.dtype(2) != c.dtype(0)) c.fail("updates differ from data in element type");
  if (c.dims(0).empty()) c.fail("data must have rank >= 1");
  c.emit("scatter_nd", {{"src", c.tensor(0)}, {"indices", c.tensor(1)}, {"updates", c.tensor(2)}},
         {{"dst", c.output(0)}}, {stringParam("reduction", reductionOf(c))});
}

}  // namespace qaic::onnx
