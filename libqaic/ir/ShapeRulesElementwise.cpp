// SPDX-License-Identifier: Apache-2.0
// Shape rules of the element-wise operators and the reductions.
#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {

Dims broadcastShapes(const Op& op, std::string_view arg, const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throwInputError(op, arg, "dims " + formatDims(b) + " do not broadcast with " + formatDims(a));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Outs shapeElew(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  if (in[0].dims != in[1].dims) {
    throwInputError(op, "src2",
                    "dims " + formatDims(in[1].dims) + " differ from src1 " + formatDims(in[0].dims) +
                        " (elew does not broadcast)");
  }
  return {in[0]};
}

Outs shapeElewBcast(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  return {TensorInfo{in[0].dtype, broadcastShapes(op, "src2", in[0].dims, in[1].dims)}};
}

Outs shapeAxis(const Op& op, Infos in) {
  axisParam(op, "axis", in[0].dims.size());
  return {in[0]};
}

Outs shapeMaxreduce(const Op& op, Infos in) {
  TensorInfo out = in[0];
  out.dims[axisParam(op, "axis", out.dims.size())] = 1;
  return {out};
}

Outs shapeMaxreduceArg(const Op& op, Infos in) {
  Outs out = shapeMaxreduce(op, in);
  out.push_back(TensorInfo{DType::Int32, out[0].dims});
  return out;
}

Outs shapeDotProduct(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  if (in[0].dims != in[1].dims) {
    throwInputError(op, "src2", "dims " + formatDims(in[1].dims) + " differ from src1 " + formatDims(in[0].dims));
  }
  return {TensorInfo{in[0].dtype, Dims{1}}};
}

}  // namespace qaic::ir::rules

namespace qaic::ir::rules {
namespace {

bool isInteger(DType type) { return !isFloating(type) && type != DType::Bool; }

}  // namespace

bool isFloating(DType type) { return type == DType::Double || type == DType::Float || type == DType::Float16; }

void requireFloating(const Op& op, std::string_view arg, const TensorInfo& t) {
  if (!isFloating(t.dtype)) {
    throwInputError(op, arg, "expected a floating-point dtype, got " + std::string(dtypeName(t.dtype)));
  }
}

// Which element types each function takes: "not" bools, abs/neg/sign also integers, the rest
// floating point only.
Outs shapeUnary(const Op& op, Infos in) {
  const std::string& func = op.string("func");
  const DType type = in[0].dtype;
  if (func == "not") {
    requireDType(op, "src", in[0], DType::Bool);
  } else if (func == "abs" || func == "neg" || func == "sign") {
    if (type == DType::Bool) throwInputError(op, "src", "'" + func + "' does not take TL_BOOL");
  } else {
    requireFloating(op, "src", in[0]);
  }
  return {in[0]};
}

Outs shapeCompare(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  return {TensorInfo{DType::Bool, broadcastShapes(op, "src2", in[0].dims, in[1].dims)}};
}

Outs shapeLogical(const Op& op, Infos in) {
  requireDType(op, "src1", in[0], DType::Bool);
  requireDType(op, "src2", in[1], DType::Bool);
  return {TensorInfo{DType::Bool, broadcastShapes(op, "src2", in[0].dims, in[1].dims)}};
}

Outs shapeWhere(const Op& op, Infos in) {
  requireDType(op, "condition", in[0], DType::Bool);
  requireSameDType(op, "src2", in[2], in[1], "src1");
  const Dims values = broadcastShapes(op, "src2", in[1].dims, in[2].dims);
  return {TensorInfo{in[1].dtype, broadcastShapes(op, "condition", values, in[0].dims)}};
}

namespace {

// The dims left after reducing `axes` of `dims`.
Dims reducedDims(const Op& op, const Dims& dims, const std::vector<int64_t>& axes, bool keep) {
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t axis : axes) {
    if (static_cast<std::size_t>(axis) >= dims.size()) {
      throwParamError(op, "axes",
                      "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(dims.size()));
    }
    reduced[static_cast<std::size_t>(axis)] = true;
  }
  Dims out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(dims[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace

Outs shapeReduce(const Op& op, Infos in) {
  const std::string& reduction = op.string("reduce_op");
  if (in[0].dtype == DType::Bool) throwInputError(op, "src", "reduce does not take TL_BOOL");
  const bool floatingOnly = reduction == "mean" || reduction == "l2" || reduction == "log_sum" ||
                            reduction == "log_sum_exp";
  if (floatingOnly && isInteger(in[0].dtype)) requireFloating(op, "src", in[0]);
  return {TensorInfo{in[0].dtype, reducedDims(op, in[0].dims, op.integers("axes"), op.boolean("keepdims"))}};
}

Outs shapeArgReduce(const Op& op, Infos in) {
  if (in[0].dtype == DType::Bool) throwInputError(op, "src", "arg_reduce does not take TL_BOOL");
  const int64_t axis = axisParam(op, "axis", in[0].dims.size());
  return {TensorInfo{DType::Int64, reducedDims(op, in[0].dims, {axis}, op.boolean("keepdims"))}};
}

Outs shapeCumsum(const Op& op, Infos in) {
  if (in[0].dtype == DType::Bool) throwInputError(op, "src", "cumsum does not take TL_BOOL");
  return shapeAxis(op, in);
}

Outs shapeTopk(const Op& op, Infos in) {
  if (in[0].dtype == DType::Bool) throwInputError(op, "src", "topk does not take TL_BOOL");
  TensorInfo out = in[0];
  const int64_t axis = axisParam(op, "axis", out.dims.size());
  const int64_t k = op.integer("k");
  if (k > out.dims[static_cast<std::size_t>(axis)])
    throwParamError(op, "k",
                    std::to_string(k) + " exceeds src dims[" + std::to_string(axis) +
                        "] = " + std::to_string(out.dims[static_cast<std::size_t>(axis)]));
  out.dims[static_cast<std::size_t>(axis)] = k;
  return {out, TensorInfo{DType::Int64, out.dims}};
}

Outs shapeLayernorm(const Op& op, Infos in) {
  requireFloating(op, "src", in[0]);
  const Dims& src = in[0].dims;
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", src.size()));
  const Dims normalized(src.begin() + static_cast<std::ptrdiff_t>(axis), src.end());
  const char* names[] = {"scale", "bias"};
  for (std::size_t i = 0; i < 2; ++i) {
    requireSameDType(op, names[i], in[i + 1], in[0], "src");
    if (in[i + 1].dims != normalized) {
      throwInputError(op, names[i],
                      "expected " + formatDims(normalized) + " (src dims from axis " + std::to_string(axis) +
                          "), got " + formatDims(in[i + 1].dims));
    }
  }
  return {in[0]};
}

}  // namespace qaic::ir::rules
