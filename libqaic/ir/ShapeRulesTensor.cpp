// SPDX-License-Identifier: Apache-2.0
// Shape rules of the data-movement, element-wise and reduction operators.
#include <cmath>

#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {
namespace {

int64_t product(const Op& op, std::string_view arg, const Dims& dims, std::size_t begin, std::size_t end) {
  int64_t count = 1;
  for (std::size_t i = begin; i < end; ++i) count = checkedMul(op, arg, count, dims[i]);
  return count;
}

}  // namespace

Outs shapeSlice(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", src.size()));
  const int64_t start = op.integer("start");
  const int64_t len = op.integer("len");
  if (start >= src[axis]) {
    throwParamError(op, "start",
                    "start " + std::to_string(start) + " >= dims[" + std::to_string(axis) + "] (" +
                        std::to_string(src[axis]) + ")");
  }
  if (len > src[axis] - start) {
    throwParamError(op, "len",
                    "start + len (" + std::to_string(start) + "+" + std::to_string(len) + ") > dims[" +
                        std::to_string(axis) + "] (" + std::to_string(src[axis]) + ")");
  }
  TensorInfo out = in[0];
  out.dims[axis] = len;
  return {out};
}

Outs shapeReshape(const Op& op, Infos in) {
  const Dims dims = op.integers("dims");
  const int64_t want = product(op, "dims", dims, 0, dims.size());
  const int64_t have = product(op, "dims", in[0].dims, 0, in[0].dims.size());
  if (want != have) {
    throwParamError(op, "dims",
                    formatDims(dims) + " holds " + std::to_string(want) + " elements, src " + formatDims(in[0].dims) +
                        " holds " + std::to_string(have));
  }
  return {TensorInfo{in[0].dtype, dims}};
}

Outs shapeTranspose(const Op& op, Infos in) {
  const auto axes = op.integers("axes");
  TensorInfo out{in[0].dtype, {}};
  for (int64_t axis : axes) out.dims.push_back(in[0].dims[axis]);
  return {out};
}

Outs shapeConcat(const Op& op, Infos in) {
  const TensorInfo& a = in[0];
  const TensorInfo& b = in[1];
  requireSameDType(op, "src2", b, a, "src1");
  requireRank(op, "src2", b, a.dims.size());
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", a.dims.size()));
  for (std::size_t i = 0; i < a.dims.size(); ++i) {
    if (i != axis && a.dims[i] != b.dims[i]) {
      throwInputError(op, "src2",
                      "dims " + formatDims(b.dims) + " differ from src1 " + formatDims(a.dims) + " outside axis " +
                          std::to_string(axis));
    }
  }
  TensorInfo out = a;
  out.dims[axis] = checkedAdd(op, "axis", a.dims[axis], b.dims[axis]);
  return {out};
}

Outs shapeFlatten(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const int64_t axis = op.integer("axis");
  if (static_cast<std::size_t>(axis) > src.size()) {
    throwParamError(op, "axis", "axis " + std::to_string(axis) + " > rank " + std::to_string(src.size()));
  }
  const auto split = static_cast<std::size_t>(axis);
  return {
      TensorInfo{in[0].dtype, Dims{product(op, "axis", src, 0, split), product(op, "axis", src, split, src.size())}}};
}

Outs shapePad(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const auto pads = op.integers("pads");
  const bool reflect = op.string("mode") == "reflect";
  TensorInfo out = in[0];
  for (std::size_t i = 0; i < src.size(); ++i) {
    const int64_t before = pads[i];
    const int64_t after = pads[i + src.size()];
    if (reflect && (before >= src[i] || after >= src[i])) {
      throwParamError(
          op, "pads",
          "reflect padding of axis " + std::to_string(i) + " must be smaller than its size " + std::to_string(src[i]));
    }
    if (op.string("mode") == "edge" && src[i] == 0 && before + after > 0) {
      throwParamError(op, "pads", "edge padding of empty axis " + std::to_string(i));
    }
    out.dims[i] = checkedAdd(op, "pads", checkedAdd(op, "pads", src[i], before), after);
  }
  return {out};
}

Outs shapeSubmean(const Op& op, Infos in) {
  requireRank(op, "src", in[0], 3);
  const Dims& src = in[0].dims;
  if (src[2] != 3) {
    throwInputError(op, "src", "expected [H,W,C] with C = 3 (the length of 'mean'), got " + formatDims(src));
  }
  const auto type = parseDType(op.string("dtype"));
  return {TensorInfo{type.value_or(in[0].dtype), Dims{src[2], src[0], src[1]}}};
}

Outs shapePick1d(const Op& op, Infos in) {
  requireRank(op, "src", in[0], 1);
  requireRank(op, "src_index", in[1], 1);
  requireDType(op, "src_index", in[1], DType::Int32);
  const int64_t len = op.integer("len");
  if (in[1].dims[0] < len) {
    throwParamError(op, "len", "len " + std::to_string(len) + " > src_index length " + std::to_string(in[1].dims[0]));
  }
  return {TensorInfo{in[0].dtype, Dims{checkedMul(op, "stride", len, op.integer("stride"))}}};
}

Outs shapeVector(const Op& op, Infos in) {
  requireRank(op, op.inputs.at(0).argName, in[0], 1);
  return {in[0]};
}

}  // namespace qaic::ir::rules

namespace qaic::ir::rules {

// Starts and ends are already clamped the ONNX way: for a positive step 0 <= start, end <= dim;
// for a negative step -1 <= end, start <= dim - 1 (an end of -1 runs through index 0).
Outs shapeStridedSlice(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const auto starts = op.integers("starts");
  const auto ends = op.integers("ends");
  const auto steps = op.integers("steps");
  TensorInfo out = in[0];
  for (std::size_t i = 0; i < src.size(); ++i) {
    const int64_t step = steps[i];
    const int64_t low = step > 0 ? 0 : -1;
    const int64_t high = step > 0 ? src[i] : src[i] - 1;
    const auto where = [&](const char* what, int64_t value) {
      if (value < low || value > high) {
        throwParamError(op, what,
                        "axis " + std::to_string(i) + ": " + std::to_string(value) + " outside [" +
                            std::to_string(low) + ", " + std::to_string(high) + "] for a step of " +
                            std::to_string(step));
      }
    };
    where("starts", starts[i]);
    where("ends", ends[i]);
    const int64_t span = step > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
    const int64_t stride = step > 0 ? step : -step;
    const int64_t length = span <= 0 ? 0 : (span + stride - 1) / stride;
    if (length < 1) {
      throwParamError(op, "ends",
                      "axis " + std::to_string(i) + ": the slice is empty; empty tensors are not supported");
    }
    out.dims[i] = length;
  }
  return {out};
}

Outs shapeExpand(const Op& op, Infos in) {
  const Dims dims = op.integers("dims");
  if (broadcastShapes(op, "src", dims, in[0].dims) != dims) {
    throwInputError(op, "src", "dims " + formatDims(in[0].dims) + " do not expand to " + formatDims(dims));
  }
  return {TensorInfo{in[0].dtype, dims}};
}

Outs shapeTile(const Op& op, Infos in) {
  const auto repeats = op.integers("repeats");
  TensorInfo out = in[0];
  for (std::size_t i = 0; i < out.dims.size(); ++i) out.dims[i] = checkedMul(op, "repeats", out.dims[i], repeats[i]);
  return {out};
}

Outs shapeTrilu(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 2);
  return {in[0]};
}

}  // namespace qaic::ir::rules
