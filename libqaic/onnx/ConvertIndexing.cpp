// Gather, GatherElements, GatherND, ScatterElements, ScatterND: indices are runtime data (token
// ids, positions) as often as constants, so they run on the device.
#include <onnx/onnx_pb.h>

#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

int64_t normalizedAxis(const Converter& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    c.attributes().fail("axis", std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

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
  const auto axis = static_cast<std::size_t>(normalizedAxis(c, c.attributes().integer("axis", 0),
                                                            static_cast<int64_t>(data.size())));
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
