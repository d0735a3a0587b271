// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the shape rules, the structural (shape-free) checks, and the rules of the
// creating and printing ops.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {
namespace {

DType paramDType(const Op& op) {
  const auto type = parseDType(op.string("dtype"));
  if (!type) throwParamError(op, "dtype", "unknown dtype '" + op.string("dtype") + "'");
  return *type;
}

int64_t checkedCount(const Op& op, std::string_view arg, const Dims& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count = checkedMul(op, arg, count, d);
  return count;
}

// The strict bound max() + 1 admits every value that truncates into range; for the 64-bit types
// max() already rounds up to 2^63 / 2^64 in double, and adding 1 leaves it there.
template <typename T>
bool fits(double value) {
  return value >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
         value < static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
}

}  // namespace

void requireRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank) {
  if (t.dims.size() != rank) {
    throwInputError(op, arg, "expected rank " + std::to_string(rank) + ", got " + formatDims(t.dims));
  }
}

void requireMinRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank) {
  if (t.dims.size() < rank) {
    throwInputError(op, arg, "expected rank >= " + std::to_string(rank) + ", got " + formatDims(t.dims));
  }
}

void requireSameDType(const Op& op, std::string_view arg, const TensorInfo& t, const TensorInfo& reference,
                      std::string_view referenceArg) {
  if (t.dtype != reference.dtype) {
    throwInputError(op, arg,
                    "dtype " + std::string(dtypeName(t.dtype)) + " differs from '" + std::string(referenceArg) + "' (" +
                        std::string(dtypeName(reference.dtype)) + ")");
  }
}

void requireDType(const Op& op, std::string_view arg, const TensorInfo& t, DType type) {
  if (t.dtype != type) {
    throwInputError(op, arg,
                    "expected dtype " + std::string(dtypeName(type)) + ", got " + std::string(dtypeName(t.dtype)));
  }
}

int64_t axisParam(const Op& op, std::string_view arg, std::size_t rank) {
  const int64_t axis = op.integer(arg);
  if (axis < 0 || static_cast<std::size_t>(axis) >= rank) {
    throwParamError(op, arg, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return axis;
}

bool representable(DType type, double value) {
  switch (type) {
    case DType::Double: return std::isfinite(value);
    case DType::Float: return std::fabs(value) <= FLT_MAX;
    case DType::Float16: return std::fabs(value) <= 65504.0;
    case DType::Int64: return fits<int64_t>(value);
    case DType::Int32: return fits<int32_t>(value);
    case DType::Int16: return fits<int16_t>(value);
    case DType::Int8: return fits<int8_t>(value);
    case DType::UInt64: return fits<uint64_t>(value);
    case DType::UInt32: return fits<uint32_t>(value);
    case DType::UInt16: return fits<uint16_t>(value);
    case DType::UInt8: return fits<uint8_t>(value);
    case DType::Bool: return value == 0.0 || value == 1.0;
  }
  return false;
}

void checkCreate(const Op& op) {
  const auto ran = op.numbers("ran");
  if (ran[0] > ran[1]) {
    throwParamError(op, "ran", "ran[0] (" + std::to_string(ran[0]) + ") > ran[1] (" + std::to_string(ran[1]) + ")");
  }
  const bool usesData = !op.boolean("from_file") && ran[0] == 0.0 && ran[1] == 0.0;
  const int64_t count = checkedCount(op, "dims", op.integers("dims"));
  const auto dataSize = static_cast<int64_t>(op.numbers("data").size());
  if (usesData && dataSize > count) {
    throwParamError(op, "data",
                    std::to_string(dataSize) + " values exceed the " + std::to_string(count) + " elements of dims");
  }
}

void checkArange(const Op& op) {
  const double start = op.number("start");
  const double stop = op.number("stop");
  const double step = op.number("step");
  const DType type = paramDType(op);
  if (step == 0.0) throwParamError(op, "step", "must not be 0");
  if (!(stop > start)) {
    throwParamError(op, "stop", "stop (" + std::to_string(stop) + ") must be > start (" + std::to_string(start) + ")");
  }
  for (const char* arg : {"start", "stop", "step"}) {
    if (!representable(type, op.number(arg))) {
      throwParamError(op, arg, "value out of range of " + std::string(dtypeName(type)));
    }
  }
  const double length = std::ceil((stop - start) / step);
  if (!(length >= 1.0) || length > 9007199254740992.0) {
    throwParamError(op, "step",
                    "length ceil((stop-start)/step) = " + std::to_string(length) + " must be between 1 and 2^53");
  }
}

void checkTranspose(const Op& op) {
  const auto axes = op.integers("axes");
  std::vector<bool> seen(axes.size(), false);
  for (int64_t axis : axes) {
    if (axis < 0 || static_cast<std::size_t>(axis) >= axes.size() || seen[axis]) {
      throwParamError(op, "axes", formatDims(axes) + " is not a permutation of 0.." + std::to_string(axes.size() - 1));
    }
    seen[axis] = true;
  }
}

void checkClip(const Op& op) {
  if (op.number("min") > op.number("max")) {
    throwParamError(op, "min",
                    "min (" + std::to_string(op.number("min")) + ") > max (" + std::to_string(op.number("max")) + ")");
  }
}

// Every pooling window must hold at least one real cell, so no divisor or max is empty.
void checkPool(const Op& op) {
  const auto size = op.integers("size");
  const auto padding = op.integers("padding");
  for (int i = 0; i < 4; ++i) {
    if (padding[i] >= size[i % 2]) {
      throwParamError(op, "padding",
                      "padding " + formatDims(padding) + " must be smaller than the window " + formatDims(size));
    }
  }
}

Outs shapeCreate(const Op& op, Infos) {
  const Dims dims = op.integers("dims");
  checkedCount(op, "dims", dims);
  return {TensorInfo{paramDType(op), dims}};
}

Outs shapeArange(const Op& op, Infos) {
  const double length = std::ceil((op.number("stop") - op.number("start")) / op.number("step"));
  return {TensorInfo{paramDType(op), Dims{static_cast<int64_t>(length)}}};
}

Outs shapeNone(const Op&, Infos) { return {}; }

Outs shapeSame(const Op&, Infos in) { return {in[0]}; }

}  // namespace qaic::ir::rules

namespace qaic::ir::rules {

void checkAxesUnique(const Op& op) {
  auto axes = op.integers("axes");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    throwParamError(op, "axes", formatDims(op.integers("axes")) + " repeats an axis");
  }
}

void checkSteps(const Op& op) {
  for (int64_t step : op.integers("steps")) {
    if (step == 0) throwParamError(op, "steps", "a step must not be 0");
  }
}

// Every pooling window must hold at least one real cell, so no divisor or max is empty.
void checkPoolNd(const Op& op) {
  const auto size = op.integers("size");
  const auto stride = op.integers("stride");
  const auto dilation = op.integers("dilation");
  const auto pads = op.integers("pads");
  if (stride.size() != size.size() || dilation.size() != size.size()) {
    throwParamError(op, "stride", "size, stride and dilation must have one value per spatial dim");
  }
  if (pads.size() != 2 * size.size()) {
    throwParamError(op, "pads", std::to_string(pads.size()) + " values, expected " + std::to_string(2 * size.size()));
  }
  for (std::size_t i = 0; i < pads.size(); ++i) {
    const std::size_t d = i % size.size();
    if (pads[i] >= (size[d] - 1) * dilation[d] + 1) {
      throwParamError(op, "pads", "padding " + formatDims(pads) + " must be smaller than the window");
    }
  }
}

// The N-D conv's and deconv's windows: one stride and dilation per kernel dim (and one
// output padding for deconv), a begin and an end pad each.
void checkConvNd(const Op& op) {
  const auto size = op.integers("size");
  if (op.integers("stride").size() != size.size() || op.integers("dilation").size() != size.size()) {
    throwParamError(op, "stride", "size, stride and dilation must have one value per spatial dim");
  }
  if (op.integers("pads").size() != 2 * size.size()) {
    throwParamError(
        op, "pads",
        std::to_string(op.integers("pads").size()) + " values, expected " + std::to_string(2 * size.size()));
  }
  if (op.optype == "deconv" && op.integers("output_padding").size() != size.size()) {
    throwParamError(op, "output_padding", "must have one value per spatial dim");
  }
}

}  // namespace qaic::ir::rules
