// SPDX-License-Identifier: Apache-2.0
// ReduceSum / Mean / Max / Min / Prod / SumSquare / L1 / L2 / LogSum / LogSumExp, ArgMax,
// ArgMin and GlobalMaxPool.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>

#include "ir/ShapeRules.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

void emitReduce(Converter& c, const std::string& reduction, std::vector<int64_t> axes, bool keep) {
  const ir::Dims in = c.dims(0);
  std::sort(axes.begin(), axes.end());
  ir::Dims out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!reduced) out.push_back(in[i]);
    if (reduced && keep) out.push_back(1);
  }
  if (axes.empty() || in.empty()) {
    // Nothing to reduce over (a scalar, or noop_with_empty_axes): the values pass through,
    // except for the reductions that transform each one.
    if (reduction == "sum" || reduction == "mean" || reduction == "max" || reduction == "min" || reduction == "prod") {
      return c.alias(0, c.tensor(0));
    }
    axes = {0};
  }
  c.emit("reduce", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {stringParam("reduce_op", reduction), integersParam("axes", axes), boolParam("keepdims", keep || in.empty())});
  if (out.empty()) c.setOnnxDims(0, {});
}

}  // namespace

void convertReduce(Converter& c) {
  static const std::map<std::string, std::string, std::less<>> reductions = {
      {"ReduceSum", "sum"},        {"ReduceMean", "mean"},
      {"ReduceMax", "max"},        {"ReduceMin", "min"},
      {"ReduceProd", "prod"},      {"ReduceSumSquare", "sum_square"},
      {"ReduceL1", "l1"},          {"ReduceL2", "l2"},
      {"ReduceLogSum", "log_sum"}, {"ReduceLogSumExp", "log_sum_exp"}};
  const std::string& op = c.node().op_type();
  if (op == "ReduceMean" && fuseLayerNorm(c)) return;
  const ir::Dims in = c.dims(0);
  const bool keep = c.attributes().integer("keepdims", 1) != 0;
  // ReduceSum takes its axes as an input from opset 13 on, the others from opset 18.
  std::optional<std::vector<int64_t>> given;
  if ((op == "ReduceSum" && c.opset() >= 13) || c.opset() >= 18) {
    if (c.hasInput(1)) given = c.constantIntegers(1, "axes");
  } else {
    given = c.attributes().integers("axes");
  }
  std::vector<int64_t> axes;
  if (given && !given->empty()) {
    axes = distinctAxes(c, *given, in.size());
    std::sort(axes.begin(), axes.end());
  } else if (c.attributes().integer("noop_with_empty_axes", 0) == 0) {
    for (std::size_t i = 0; i < in.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  emitReduce(c, reductions.find(op)->second, axes, keep);
}

void convertArgReduce(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const auto axis = normalizeAxis(c, c.attributes().integer("axis", 0), in.size());
  const bool keep = c.attributes().integer("keepdims", 1) != 0;
  c.emit("arg_reduce", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {stringParam("arg_op", c.node().op_type() == "ArgMax" ? "max" : "min"),
          numberParam("axis", static_cast<double>(axis)), boolParam("keepdims", keep),
          boolParam("select_last_index", c.attributes().integer("select_last_index", 0) != 0)});
  if (!keep && in.size() == 1) c.setOnnxDims(0, {});
}

// Hardmax: 1 at the first largest element along the axis, 0 elsewhere. Before opset 13 the
// input is coerced to 2-D at `axis` (default 1) and the whole row is one axis.
void convertHardmax(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  if (!ir::rules::isFloating(c.dtype(0))) c.fail("input must be of a floating type");
  const bool coerced = c.opset() < 13;
  int64_t axis = normalizeAxis(c, c.attributes().integer("axis", coerced ? 1 : -1), in.size());
  std::string src = c.tensor(0);
  ir::Dims dims = in;
  if (coerced) {
    int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < in.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= in[i];
    dims = {outer, inner};
    src = c.reshaped(src, dims, "rows");
    axis = 1;
  }
  const std::string first = c.temporary("argmax");
  c.emit("arg_reduce", {{"src", src}}, {{"dst", first}},
         {stringParam("arg_op", "max"), numberParam("axis", static_cast<double>(axis)), boolParam("keepdims", true),
          boolParam("select_last_index", false)});
  const auto at = static_cast<std::size_t>(axis);
  const std::string hit = c.temporary("hit");
  c.emit("compare", {{"src1", first}, {"src2", axisPositions(c, dims.size(), at, dims[at])}}, {{"dst", hit}},
         {stringParam("compare_op", "equal")});
  const std::string dst = coerced ? c.temporary("hardmax_rows") : c.output(0);
  c.emit("where",
         {{"condition", hit}, {"src1", c.scalar(c.dtype(0), 1, "one")}, {"src2", c.scalar(c.dtype(0), 0, "zero")}},
         {{"dst", dst}});
  if (coerced) c.reshapeInto(0, dst, in);
}

// CumSum: the axis is an input and must be known at import time.
void convertCumSum(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const auto given = c.constantIntegers(1, "axis");
  if (given.size() != 1) c.fail("input 'axis' must hold one value");
  const auto axis = normalizeAxis(c, given[0], in.size());
  c.emit("cumsum", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {numberParam("axis", static_cast<double>(axis)),
          boolParam("exclusive", c.attributes().integer("exclusive", 0) != 0),
          boolParam("reverse", c.attributes().integer("reverse", 0) != 0)});
}

// TopK (opset 10 on): K is an input and must be known at import time. Both outputs are made
// (one may be unused).
void convertTopK(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const auto k = c.constantIntegers(1, "K");
  if (k.size() != 1 || k[0] < 1) c.fail("input 'K' must hold one value >= 1");
  const auto axis = normalizeAxis(c, c.attributes().integer("axis", -1), in.size());
  if (k[0] > in[static_cast<std::size_t>(axis)])
    c.fail("K = " + std::to_string(k[0]) + " exceeds the input's dims[" + std::to_string(axis) +
           "] = " + std::to_string(in[static_cast<std::size_t>(axis)]));
  c.emit("topk", {{"src", c.tensor(0)}},
         {{"dst", c.hasOutput(0) ? c.output(0) : c.temporary("values")},
          {"indices", c.hasOutput(1) ? c.output(1) : c.temporary("indices")}},
         {numberParam("axis", static_cast<double>(axis)), numberParam("k", static_cast<double>(k[0])),
          boolParam("largest", c.attributes().integer("largest", 1) != 0),
          boolParam("sorted", c.attributes().integer("sorted", 1) != 0)});
}

void convertGlobalMaxPool(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.size() < 3) c.fail("input must be [N, C, d1, ...]");
  std::vector<int64_t> axes;
  for (std::size_t i = 2; i < in.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  emitReduce(c, "max", axes, true);
}

}  // namespace qaic::onnx
