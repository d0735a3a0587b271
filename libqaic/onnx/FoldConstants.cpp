// Import-time evaluation of constant subgraphs, mostly shape arithmetic
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) that static IR shapes make constant.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

std::string what(const Converter& c, const std::string& role) {
  return c.node().op_type() + " node '" + c.label() + "': " + role;
}

int64_t product(const ir::Dims& dims, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

int64_t normalizedAxis(const Converter& c, int64_t axis, int64_t rank, const std::string& name) {
  if (axis < -rank || axis >= rank) {
    c.attributes().fail(name, std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Unsqueeze / Squeeze axes: attribute before opset 13, optional constant input after.
std::optional<std::vector<int64_t>> axesOf(Converter& c) {
  if (c.opset() < 13) return c.attributes().integers("axes");
  if (!c.hasInput(1)) return std::nullopt;
  return toInt64s(c.requireConstant(1, "axes"), what(c, "axes"));
}

}  // namespace

bool foldConstant(Converter& c) {
  const NodeAttributes& a = c.attributes();
  ImportedTensor value;
  if (const auto* attr = a.find("value")) {
    value = tensorFromProto(attr->t(), what(c, "value"));
  } else if (a.has("value_float")) {
    value = fromDoubles("", ir::DType::Float, {}, {a.number("value_float", 0)});
  } else if (auto floats = a.numbers("value_floats")) {
    value = fromDoubles("", ir::DType::Float, {static_cast<int64_t>(floats->size())},
                        std::vector<double>(floats->begin(), floats->end()));
  } else if (a.has("value_int")) {
    value = fromInt64s("", ir::DType::Int64, {}, {a.integer("value_int", 0)});
  } else if (auto ints = a.integers("value_ints")) {
    value = fromInt64s("", ir::DType::Int64, {static_cast<int64_t>(ints->size())}, *ints);
  } else {
    c.fail("only tensor, float(s) and int(s) values are supported");
  }
  c.setConstant(0, std::move(value));
  return true;
}

bool foldShape(Converter& c) {
  const ImportedTensor* known = c.constant(0);
  const ir::Dims dims = known ? known->dims : c.dims(0);
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = c.attributes().integer("start", 0);
  int64_t end = c.attributes().integer("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> values(dims.begin() + start, dims.begin() + end);
  c.setConstant(0, fromInt64s("", ir::DType::Int64, {static_cast<int64_t>(values.size())}, values));
  return true;
}

bool foldGather(Converter& c) {
  const ImportedTensor& data = c.requireConstant(0, "data");
  const ImportedTensor& indicesTensor = c.requireConstant(1, "indices");
  const auto indices = toInt64s(indicesTensor, what(c, "indices"));
  const auto rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) c.fail("data must have rank >= 1");
  const auto axis = static_cast<std::size_t>(normalizedAxis(c, c.attributes().integer("axis", 0), rank, "axis"));
  const int64_t axisDim = data.dims[axis];
  const auto outer = product(data.dims, 0, axis);
  const auto inner = product(data.dims, axis + 1, data.dims.size());
  const std::size_t chunk = static_cast<std::size_t>(inner) * ir::dtypeSize(data.dtype);

  ImportedTensor out{"", data.dtype, {}, {}};
  out.dims.assign(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  out.dims.insert(out.dims.end(), indicesTensor.dims.begin(), indicesTensor.dims.end());
  out.dims.insert(out.dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
  if (outer > 0 && chunk > 0 && indices.size() > kMaxFoldedBytes / static_cast<std::size_t>(outer) / chunk) {
    c.fail("the gathered constant would exceed " + std::to_string(kMaxFoldedBytes) + " bytes");
  }
  out.data.reserve(static_cast<std::size_t>(outer) * indices.size() * chunk);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : indices) {
      if (index < -axisDim || index >= axisDim) c.fail("index " + std::to_string(index) + " is out of range");
      if (index < 0) index += axisDim;
      const std::byte* from = data.data.data() + (static_cast<std::size_t>(o * axisDim + index)) * chunk;
      out.data.insert(out.data.end(), from, from + chunk);
    }
  }
  c.setConstant(0, std::move(out));
  return true;
}

bool foldUnsqueeze(Converter& c) {
  ImportedTensor out = c.requireConstant(0, "data");
  auto axes = axesOf(c);
  if (!axes) c.fail("axes are required");
  const auto rank = static_cast<int64_t>(out.dims.size() + axes->size());
  for (auto& axis : *axes) axis = normalizedAxis(c, axis, rank, "axes");
  std::sort(axes->begin(), axes->end());
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) c.fail("axes repeat");
  for (int64_t axis : *axes) out.dims.insert(out.dims.begin() + axis, 1);
  if (out.dims.size() > ir::kMaxRank) c.fail("the result has more than " + std::to_string(ir::kMaxRank) + " dims");
  c.setConstant(0, std::move(out));
  return true;
}

bool foldSqueeze(Converter& c) {
  ImportedTensor out = c.requireConstant(0, "data");
  const auto rank = static_cast<int64_t>(out.dims.size());
  std::vector<bool> drop(out.dims.size(), false);
  if (auto axes = axesOf(c)) {
    for (int64_t axis : *axes) {
      const auto a = static_cast<std::size_t>(normalizedAxis(c, axis, rank, "axes"));
      if (out.dims[a] != 1) c.fail("axis " + std::to_string(axis) + " is not of size 1");
      drop[a] = true;
    }
  } else {
    for (std::size_t i = 0; i < out.dims.size(); ++i) drop[i] = out.dims[i] == 1;
  }
  ir::Dims kept;
  for (std::size_t i = 0; i < out.dims.size(); ++i) {
    if (!drop[i]) kept.push_back(out.dims[i]);
  }
  out.dims = kept;
  c.setConstant(0, std::move(out));
  return true;
}

bool foldCast(Converter& c) {
  const ImportedTensor& in = c.requireConstant(0, "input");
  const auto to = dtypeFromOnnx(static_cast<int32_t>(c.attributes().integer("to", 0)));
  if (!to) c.attributes().fail("to", "names an unsupported element type");
  if (isIntegral(*to) && isIntegral(in.dtype)) {
    c.setConstant(0, fromInt64s("", *to, in.dims, toInt64s(in, what(c, "input"))));
  } else {
    c.setConstant(0, fromDoubles("", *to, in.dims, toDoubles(in, what(c, "input"))));
  }
  return true;
}

bool foldConcat(Converter& c) {
  const int inputs = c.node().input_size();
  if (inputs < 1 || !c.attributes().has("axis")) return false;
  const ImportedTensor& first = c.requireConstant(0, "inputs");
  const auto rank = static_cast<int64_t>(first.dims.size());
  if (rank == 0) c.fail("inputs must have rank >= 1");
  const auto axis = static_cast<std::size_t>(normalizedAxis(c, c.attributes().integer("axis", 0), rank, "axis"));
  ImportedTensor out{"", first.dtype, first.dims, {}};
  out.dims[axis] = 0;
  for (int i = 0; i < inputs; ++i) {
    const ImportedTensor& t = c.requireConstant(static_cast<std::size_t>(i), "inputs");
    if (t.dtype != first.dtype || t.dims.size() != first.dims.size()) c.fail("inputs differ in element type or rank");
    for (std::size_t d = 0; d < t.dims.size(); ++d) {
      if (d != axis && t.dims[d] != first.dims[d]) c.fail("inputs differ in dims other than the axis");
    }
    out.dims[axis] += t.dims[axis];
  }
  const auto outer = product(first.dims, 0, axis);
  const std::size_t size = ir::dtypeSize(first.dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int i = 0; i < inputs; ++i) {
      const ImportedTensor& t = c.requireConstant(static_cast<std::size_t>(i), "inputs");
      const std::size_t chunk = static_cast<std::size_t>(product(t.dims, axis, t.dims.size())) * size;
      const std::byte* from = t.data.data() + static_cast<std::size_t>(o) * chunk;
      out.data.insert(out.data.end(), from, from + chunk);
    }
  }
  c.setConstant(0, std::move(out));
  return true;
}

bool foldReshape(Converter& c) {
  ImportedTensor out = c.requireConstant(0, "data");
  out.dims = resolveReshape(c, c.dims(0), reshapeTarget(c));
  c.setConstant(0, std::move(out));
  return true;
}

// Equal shapes or a one-element operand; other broadcasts are left to elew_bcast.
bool foldBinaryElementwise(Converter& c) {
  const ImportedTensor& a = c.requireConstant(0, "A");
  const ImportedTensor& b = c.requireConstant(1, "B");
  if (a.dtype != b.dtype) c.fail("operands differ in element type");
  const int64_t na = ir::elementCount(a.dims), nb = ir::elementCount(b.dims);
  if (!(a.dims == b.dims || na == 1 || nb == 1)) return false;
  // One side is all ones (or both shapes are equal), so the broadcast dim is the larger one.
  ir::Dims dims(std::max(a.dims.size(), b.dims.size()), 1);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::size_t fromEnd = dims.size() - 1 - i;
    if (fromEnd < a.dims.size()) dims[i] = std::max(dims[i], a.dims[a.dims.size() - 1 - fromEnd]);
    if (fromEnd < b.dims.size()) dims[i] = std::max(dims[i], b.dims[b.dims.size() - 1 - fromEnd]);
  }
  const std::size_t n = static_cast<std::size_t>(std::max(na, nb));
  const std::string& op = c.node().op_type();
  if (isIntegral(a.dtype)) {
    const auto x = toInt64s(a, what(c, "A")), y = toInt64s(b, what(c, "B"));
    std::vector<int64_t> r(n);
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t u = x[na == 1 ? 0 : i], v = y[nb == 1 ? 0 : i];
      if (op == "Div" && v == 0) c.fail("integer division by zero");
      // Wrapping arithmetic: shape values never overflow, other inputs must not be UB.
      const auto uu = static_cast<uint64_t>(u), vv = static_cast<uint64_t>(v);
      r[i] = op == "Add" ? static_cast<int64_t>(uu + vv)
             : op == "Sub" ? static_cast<int64_t>(uu - vv)
             : op == "Mul" ? static_cast<int64_t>(uu * vv)
             : (u == INT64_MIN && v == -1) ? u : u / v;
    }
    c.setConstant(0, fromInt64s("", a.dtype, dims, r));
  } else {
    const auto x = toDoubles(a, what(c, "A")), y = toDoubles(b, what(c, "B"));
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double u = x[na == 1 ? 0 : i], v = y[nb == 1 ? 0 : i];
      r[i] = op == "Add" ? u + v : op == "Sub" ? u - v : op == "Mul" ? u * v : u / v;
    }
    c.setConstant(0, fromDoubles("", a.dtype, dims, r));
  }
  return true;
}

bool foldIdentity(Converter& c) {
  c.setConstant(0, c.requireConstant(0, "input"));
  return true;
}

}  // namespace qaic::onnx
