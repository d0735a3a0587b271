// SPDX-License-Identifier: Apache-2.0
// Operators computed only at import time: their results are constants of the static network
// (Constant, Shape, Size, Range, ConstantOfShape, EyeLike). Every other node with constant inputs
// is evaluated through its IR ops (ConstantEvaluation.cpp).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

std::string what(const Converter& c, const std::string& role) {
  return c.node().op_type() + " node '" + c.label() + "': " + role;
}

}  // namespace

bool foldConstant(Converter& c) {
  const NodeAttributes& a = c.attributes();
  ImportedTensor value;
  if (const auto* attr = a.find("value")) {
    value = tensorFromProto(attr->t(), what(c, "value"), c.externalDataDir());
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
  const ir::Dims dims = c.dims(0);
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

bool foldSize(Converter& c) {
  c.setConstant(0, fromInt64s("", ir::DType::Int64, {}, {ir::elementCount(c.dims(0))}));
  return true;
}

// Range's length depends on its values, so it exists only with constant inputs.
bool foldRange(Converter& c) {
  const ImportedTensor& start = c.requireConstant(0, "start");
  const ImportedTensor& limit = c.requireConstant(1, "limit");
  const ImportedTensor& delta = c.requireConstant(2, "delta");
  if (start.dtype != limit.dtype || start.dtype != delta.dtype) c.fail("start, limit and delta differ in element type");
  const double first = scalarValue(start, what(c, "start"));
  const double last = scalarValue(limit, what(c, "limit"));
  const double step = scalarValue(delta, what(c, "delta"));
  if (step == 0) c.fail("delta is 0");
  const double count = std::max(std::ceil((last - first) / step), 0.0);
  if (!(count >= 1)) c.fail("the range is empty; empty tensors are not supported");
  if (count * static_cast<double>(ir::dtypeSize(start.dtype)) > static_cast<double>(kMaxFoldedBytes)) {
    c.fail("the range would exceed " + std::to_string(kMaxFoldedBytes) + " bytes");
  }
  const auto n = static_cast<int64_t>(count);
  if (isIntegral(start.dtype)) {
    const int64_t a = toInt64s(start)[0], d = toInt64s(delta)[0];
    std::vector<int64_t> values(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = a + i * d;
    c.setConstant(0, fromInt64s("", start.dtype, {n}, values));
  } else {
    // ONNX computes start + i * delta in the element type.
    std::vector<double> values(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      values[static_cast<std::size_t>(i)] = start.dtype == ir::DType::Float
                                                ? static_cast<double>(static_cast<float>(first) +
                                                                      static_cast<float>(i) * static_cast<float>(step))
                                                : first + static_cast<double>(i) * step;
    }
    c.setConstant(0, fromDoubles("", start.dtype, {n}, values));
  }
  return true;
}

// ConstantOfShape's shape input is known whenever shapes are static.
bool foldConstantOfShape(Converter& c) {
  const std::vector<int64_t> dims = c.constantIntegers(0, "input");
  ImportedTensor fill = fromDoubles("", ir::DType::Float, {1}, {0.0});
  if (const auto* attr = c.attributes().find("value")) {
    fill = tensorFromProto(attr->t(), what(c, "value"), c.externalDataDir());
    if (ir::elementCount(fill.dims) != 1) c.attributes().fail("value", "must hold one element");
  }
  for (int64_t d : dims) {
    if (d <= 0) c.fail("shape " + std::to_string(d) + ": empty tensors are not supported");
  }
  const int64_t count = ir::elementCount(dims);
  const std::size_t size = ir::dtypeSize(fill.dtype);
  if (static_cast<std::size_t>(count) > kMaxFoldedBytes / size) {
    c.fail("the result would exceed " + std::to_string(kMaxFoldedBytes) + " bytes");
  }
  ImportedTensor out{"", fill.dtype, ir::Dims(dims.begin(), dims.end()), {}};
  out.data.resize(static_cast<std::size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(out.data.mutableData() + static_cast<std::size_t>(i) * size, fill.data.data(), size);
  c.setConstant(0, std::move(out));
  return true;
}

// EyeLike's result depends only on its input's dims (2-D): ones where column - row == k.
bool foldEyeLike(Converter& c) {
  c.requireRank(0, {2});
  ir::DType dtype = c.dtype(0);
  if (const auto* attr = c.attributes().find("dtype")) {
    const auto chosen = dtypeFromOnnx(static_cast<int32_t>(attr->i()));
    if (!chosen) c.attributes().fail("dtype", "names an element type the IR does not have");
    dtype = *chosen;
  }
  const ir::Dims dims = c.dims(0);
  const int64_t k = c.attributes().integer("k", 0);
  const int64_t count = ir::elementCount(dims);
  if (static_cast<std::size_t>(count) > kMaxFoldedBytes / ir::dtypeSize(dtype)) {
    c.fail("the result would exceed " + std::to_string(kMaxFoldedBytes) + " bytes");
  }
  std::vector<int64_t> values(static_cast<std::size_t>(count), 0);
  for (int64_t row = 0; row < dims[0]; ++row) {
    const int64_t column = row + k;
    if (column >= 0 && column < dims[1]) values[static_cast<std::size_t>(row * dims[1] + column)] = 1;
  }
  c.setConstant(0, fromInt64s("", dtype, dims, values));
  return true;
}

bool foldIdentity(Converter& c) {
  c.forward(0, 0);  // the same constant, so one create serves both values
  return true;
}

}  // namespace qaic::onnx
