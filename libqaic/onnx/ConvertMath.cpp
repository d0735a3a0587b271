// SPDX-License-Identifier: Apache-2.0
// Element-wise arithmetic, comparison and logic, the math functions and activations, Clip,
// Softmax / LogSoftmax, LayerNormalization, Cast, Gemm and MatMul.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <map>

#include "ir/OpRegistry.hpp"
#include "ir/ShapeRules.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

// ONNX operator -> elew_op of elew / elew_bcast.
const std::map<std::string, std::string, std::less<>>& elewOps() {
  static const std::map<std::string, std::string, std::less<>> ops = {
      {"Add", "TL_SUM"}, {"Sub", "TL_SUB"}, {"Mul", "TL_MUL"}, {"Div", "TL_DIV"},  {"Pow", "TL_POW"},
      {"Max", "TL_MAX"}, {"Min", "TL_MIN"}, {"Sum", "TL_SUM"}, {"Mean", "TL_SUM"}, {"PRelu", "TL_PRELU"}};
  return ops;
}

// ONNX operator -> the unary op's func, with the defaults of its attributes (alpha, beta).
struct UnaryFunction {
  std::string_view func;
  std::string_view alphaName = {}, betaName = {};
  float alpha = 0, beta = 0;
};
const std::map<std::string, UnaryFunction, std::less<>>& unaryFunctions() {
  static const std::map<std::string, UnaryFunction, std::less<>> functions = {
      {"Abs", {"abs"}},
      {"Neg", {"neg"}},
      {"Sign", {"sign"}},
      {"Floor", {"floor"}},
      {"Ceil", {"ceil"}},
      {"Round", {"round"}},
      {"Reciprocal", {"reciprocal"}},
      {"Sqrt", {"sqrt"}},
      {"Exp", {"exp"}},
      {"Log", {"log"}},
      {"Sin", {"sin"}},
      {"Cos", {"cos"}},
      {"Tan", {"tan"}},
      {"Asin", {"asin"}},
      {"Acos", {"acos"}},
      {"Atan", {"atan"}},
      {"Sinh", {"sinh"}},
      {"Cosh", {"cosh"}},
      {"Asinh", {"asinh"}},
      {"Acosh", {"acosh"}},
      {"Atanh", {"atanh"}},
      {"Tanh", {"tanh"}},
      {"Erf", {"erf"}},
      {"Softplus", {"softplus"}},
      {"Softsign", {"softsign"}},
      {"HardSwish", {"hardswish"}},
      {"Not", {"not"}},
      {"HardSigmoid", {"hardsigmoid", "alpha", "beta", 0.2f, 0.5f}},
      {"Elu", {"elu", "alpha", "", 1.0f}},
      {"Selu", {"selu", "alpha", "gamma", 1.67326319217681884765625f, 1.05070102214813232421875f}},
      {"Celu", {"celu", "alpha", "", 1.0f}},
      {"ThresholdedRelu", {"thresholded_relu", "alpha", "", 1.0f}},
  };
  return functions;
}

void unary(Converter& c, const std::string& optype, std::vector<ir::Param> params = {}) {
  c.emit(optype, {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, std::move(params));
  c.keepScalarOutput(0);
}

void requireSameTypes(Converter& c) {
  for (std::size_t i = 1; i < c.inputCount(); ++i) {
    if (c.hasInput(i) && c.dtype(i) != c.dtype(0)) {
      c.fail("inputs differ in element type (" + std::string(ir::dtypeName(c.dtype(0))) + " and " +
             std::string(ir::dtypeName(c.dtype(i))) + ")");
    }
  }
}

// The widest range of `dtype`, standing in for Clip's absent bounds (JSON has no infinity).
std::pair<double, double> dtypeRange(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::Double: return {std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max()};
    case ir::DType::Int64: return {-9223372036854774784.0, 9223372036854774784.0};  // inside int64 as doubles
    case ir::DType::UInt64: return {0, 18446744073709549568.0};
    case ir::DType::Int32: return {std::numeric_limits<int32_t>::lowest(), std::numeric_limits<int32_t>::max()};
    case ir::DType::UInt32: return {0, std::numeric_limits<uint32_t>::max()};
    case ir::DType::Int16: return {std::numeric_limits<int16_t>::lowest(), std::numeric_limits<int16_t>::max()};
    case ir::DType::UInt16: return {0, std::numeric_limits<uint16_t>::max()};
    case ir::DType::Int8: return {std::numeric_limits<int8_t>::lowest(), std::numeric_limits<int8_t>::max()};
    case ir::DType::UInt8: return {0, std::numeric_limits<uint8_t>::max()};
    case ir::DType::Bool: return {0, 1};
    case ir::DType::Float16: return {-65504.0, 65504.0};
    case ir::DType::Float: break;
  }
  return {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()};
}

double scalarInput(Converter& c, std::size_t i, const std::string& role) {
  return scalarValue(c.requireConstant(i, role), c.node().op_type() + " node '" + c.label() + "': " + role);
}

}  // namespace

void binary(Converter& c, const std::string& elewOp, const std::string& a, const std::string& b,
            const std::string& dst) {
  const bool lightnet = std::find(std::begin(ir::kElewOps), std::end(ir::kElewOps), elewOp) != std::end(ir::kElewOps);
  const bool sameShape = c.tensorDims(a) == c.tensorDims(b);
  c.emit(lightnet && sameShape ? "elew" : "elew_bcast", {{"src1", a}, {"src2", b}}, {{"dst", dst}},
         {stringParam("elew_op", elewOp)});
}

void unaryFunction(Converter& c, const std::string& func, const std::string& src, const std::string& dst) {
  c.emit("unary", {{"src", src}}, {{"dst", dst}},
         {stringParam("func", func), numberParam("alpha", 0), numberParam("beta", 0)});
}

std::string axisPositions(Converter& c, std::size_t rank, std::size_t axis, int64_t length) {
  std::vector<int64_t> positions(static_cast<std::size_t>(length));
  for (int64_t i = 0; i < length; ++i) positions[static_cast<std::size_t>(i)] = i;
  ir::Dims dims(rank, 1);
  dims[axis] = length;
  return c.constantTensor(fromInt64s("", ir::DType::Int64, dims, positions), c.label() + "/positions");
}

void convertBinaryElementwise(Converter& c) {
  if (c.opset() < 7 && c.attributes().has("axis"))
    c.fail("legacy broadcasting with an axis (opset < 7) is not supported");
  const std::string& op = c.node().op_type();
  if (op == "Div" && fuseGelu(c)) return;
  std::string elewOp;
  if (op == "Mod") {
    elewOp = c.attributes().integer("fmod", 0) != 0 ? "TL_FMOD" : "TL_MOD";
    const ir::DType type = c.dtype(0);
    if (elewOp == "TL_MOD" && (type == ir::DType::Float || type == ir::DType::Double || type == ir::DType::Float16)) {
      c.attributes().fail("fmod", "must be 1 for floating-point inputs");
    }
  } else {
    elewOp = elewOps().find(op)->second;
  }
  std::string exponent = c.tensor(1);
  if (op == "Pow" && c.dtype(1) != c.dtype(0)) {
    // ONNX lets the exponent have its own type; the IR computes in the base's.
    const std::string cast = c.temporary("exponent");
    c.emit("cast", {{"src", exponent}}, {{"dst", cast}},
           {stringParam("dtype", std::string(ir::dtypeName(c.dtype(0))))});
    exponent = cast;
  } else {
    requireSameTypes(c);
  }
  binary(c, elewOp, c.tensor(0), exponent, c.output(0));
  c.keepScalarOutput(0);
}

// Sum, Mean, Max, Min of any number of inputs: a chain of pairs (Mean then scaled by 1/n).
void convertVariadic(Converter& c) {
  const std::string& op = c.node().op_type();
  const std::size_t n = c.inputCount();
  if (n == 0) c.fail("needs at least one input");
  requireSameTypes(c);
  const std::string& elewOp = elewOps().find(op)->second;
  const bool mean = op == "Mean";
  std::string acc = c.tensor(0);
  if (n == 1 && !mean) return c.alias(0, acc);
  for (std::size_t i = 1; i < n; ++i) {
    const bool last = i + 1 == n && !mean;
    const std::string dst = last ? c.output(0) : c.temporary("partial" + std::to_string(i));
    binary(c, elewOp, acc, c.tensor(i), dst);
    acc = dst;
  }
  if (mean) {
    const std::string scale = c.scalar(c.dtype(0), 1.0 / static_cast<double>(n), "inverse_count");
    binary(c, "TL_MUL", acc, scale, c.output(0));
  }
  c.keepScalarOutput(0);
}

void convertComparison(Converter& c) {
  static const std::map<std::string, std::string, std::less<>> ops = {{"Equal", "equal"},
                                                                      {"Less", "less"},
                                                                      {"LessOrEqual", "less_equal"},
                                                                      {"Greater", "greater"},
                                                                      {"GreaterOrEqual", "greater_equal"}};
  requireSameTypes(c);
  c.emit("compare", {{"src1", c.tensor(0)}, {"src2", c.tensor(1)}}, {{"dst", c.output(0)}},
         {stringParam("compare_op", ops.find(c.node().op_type())->second)});
  c.keepScalarOutput(0);
}

void convertLogical(Converter& c) {
  static const std::map<std::string, std::string, std::less<>> ops = {{"And", "and"}, {"Or", "or"}, {"Xor", "xor"}};
  c.emit("logical", {{"src1", c.tensor(0)}, {"src2", c.tensor(1)}}, {{"dst", c.output(0)}},
         {stringParam("logical_op", ops.find(c.node().op_type())->second)});
  c.keepScalarOutput(0);
}

void convertWhere(Converter& c) {
  if (c.dtype(1) != c.dtype(2)) c.fail("X and Y differ in element type");
  c.emit("where", {{"condition", c.tensor(0)}, {"src1", c.tensor(1)}, {"src2", c.tensor(2)}}, {{"dst", c.output(0)}});
  c.keepScalarOutput(0);
}

// IsNaN: the values unequal to themselves.
void convertIsNaN(Converter& c) {
  if (!ir::rules::isFloating(c.dtype(0))) c.fail("input must be of a floating type");
  const std::string self = c.temporary("equal_self");
  c.emit("compare", {{"src1", c.tensor(0)}, {"src2", c.tensor(0)}}, {{"dst", self}},
         {stringParam("compare_op", "equal")});
  unaryFunction(c, "not", self, c.output(0));
  c.keepScalarOutput(0);
}

// IsInf: equal to +inf, to -inf, or (both detected) |x| equal to +inf.
void convertIsInf(Converter& c) {
  if (!ir::rules::isFloating(c.dtype(0))) c.fail("input must be of a floating type");
  const bool positive = c.attributes().integer("detect_positive", 1) != 0;
  const bool negative = c.attributes().integer("detect_negative", 1) != 0;
  const double infinity = std::numeric_limits<double>::infinity();
  std::string x = c.tensor(0);
  if (!positive && !negative) {
    // Nothing is detected: an all-false result of the input's dims.
    c.emit("create", {}, {{"dst", c.output(0)}}, createParams(ir::DType::Bool, irDims(c.dims(0)), false));
    c.keepScalarOutput(0);
    return;
  }
  if (positive && negative) {
    const std::string magnitude = c.temporary("magnitude");
    unaryFunction(c, "abs", x, magnitude);
    x = magnitude;
  }
  const std::string bound = c.scalar(c.dtype(0), negative && !positive ? -infinity : infinity, "infinity");
  c.emit("compare", {{"src1", x}, {"src2", bound}}, {{"dst", c.output(0)}}, {stringParam("compare_op", "equal")});
  c.keepScalarOutput(0);
}

// OneHot: `values[1]` where the position along the new axis equals the index (negative indices
// count from `depth`), `values[0]` elsewhere. The depth must be known at import time.
void convertOneHot(Converter& c) {
  const ir::Dims indices = c.dims(0);
  const auto depthValues = c.constantIntegers(1, "depth");
  if (depthValues.size() != 1 || depthValues[0] < 1) c.fail("input 'depth' must hold one value >= 1");
  const int64_t depth = depthValues[0];
  if (irDims(c.dims(2)) != ir::Dims{2}) c.fail("input 'values' must hold two values [off, on]");
  const std::size_t rank = indices.size() + 1;
  const auto axis = static_cast<std::size_t>(normalizeAxis(c, c.attributes().integer("axis", -1), rank));
  // The indices as int64 with the new axis, negative ones wrapped.
  std::string index = c.tensor(0);
  if (c.dtype(0) != ir::DType::Int64) {
    index = c.temporary("index");
    c.emit("cast", {{"src", c.tensor(0)}}, {{"dst", index}}, {stringParam("dtype", "TL_INT64")});
  }
  ir::Dims withAxis = indices;
  withAxis.insert(withAxis.begin() + static_cast<std::ptrdiff_t>(axis), 1);
  index = c.reshaped(index, withAxis, "index_axis");
  const std::string depthTensor = c.constantTensor(fromInt64s("", ir::DType::Int64, {1}, {depth}),
                                                   c.label() + "/depth");
  const std::string zero = c.constantTensor(fromInt64s("", ir::DType::Int64, {1}, {0}), c.label() + "/zero");
  const std::string negativeIndex = c.temporary("negative"), shifted = c.temporary("shifted"),
                    wrapped = c.temporary("wrapped");
  c.emit("compare", {{"src1", index}, {"src2", zero}}, {{"dst", negativeIndex}}, {stringParam("compare_op", "less")});
  c.emit("elew_bcast", {{"src1", index}, {"src2", depthTensor}}, {{"dst", shifted}},
         {stringParam("elew_op", "TL_SUM")});
  c.emit("where", {{"condition", negativeIndex}, {"src1", shifted}, {"src2", index}}, {{"dst", wrapped}});
  const std::string position = axisPositions(c, rank, axis, depth);
  const std::string hit = c.temporary("hit");
  c.emit("compare", {{"src1", wrapped}, {"src2", position}}, {{"dst", hit}}, {stringParam("compare_op", "equal")});
  c.emit("where",
         {{"condition", hit},
          {"src1", c.sliced(c.tensor(2), 0, 1, 2, "on")},
          {"src2", c.sliced(c.tensor(2), 0, 0, 1, "off")}},
         {{"dst", c.output(0)}});
}

void convertUnary(Converter& c) {
  const UnaryFunction& f = unaryFunctions().find(c.node().op_type())->second;
  const float alpha = f.alphaName.empty() ? f.alpha : c.attributes().number(std::string(f.alphaName), f.alpha);
  const float beta = f.betaName.empty() ? f.beta : c.attributes().number(std::string(f.betaName), f.beta);
  unary(c, "unary", {stringParam("func", std::string(f.func)), numberParam("alpha", alpha), numberParam("beta", beta)});
}

// Gelu (opset 20): the IR's gelu, or gelu_tanh for approximate = "tanh".
void convertGelu(Converter& c) {
  const std::string approximate = c.attributes().string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    c.attributes().fail("approximate", "is '" + approximate + "'; expected none or tanh");
  unaryFunction(c, approximate == "tanh" ? "gelu_tanh" : "gelu", c.tensor(0), c.output(0));
  c.keepScalarOutput(0);
}

// Mish (opset 18): x * tanh(softplus(x)).
void convertMish(Converter& c) {
  const std::string softplus = c.temporary("softplus"), tanh = c.temporary("tanh");
  unaryFunction(c, "softplus", c.tensor(0), softplus);
  unaryFunction(c, "tanh", softplus, tanh);
  binary(c, "TL_MUL", c.tensor(0), tanh, c.output(0));
  c.keepScalarOutput(0);
}

// Shrink: x + bias below -lambd, x - bias above lambd, zero between.
void convertShrink(Converter& c) {
  if (c.dtype(0) == ir::DType::Bool) c.fail("input must be numeric");
  const double lambd = c.attributes().number("lambd", 0.5f), bias = c.attributes().number("bias", 0.0f);
  if (!(lambd >= 0)) c.attributes().fail("lambd", "must be >= 0");
  const ir::DType dtype = c.dtype(0);
  const std::string x = c.tensor(0);
  const std::string below = c.temporary("below"), above = c.temporary("above");
  c.emit("compare", {{"src1", x}, {"src2", c.scalar(dtype, -lambd, "minus_lambd")}}, {{"dst", below}},
         {stringParam("compare_op", "less")});
  c.emit("compare", {{"src1", x}, {"src2", c.scalar(dtype, lambd, "lambd")}}, {{"dst", above}},
         {stringParam("compare_op", "greater")});
  const std::string raised = c.temporary("raised"), lowered = c.temporary("lowered"), upper = c.temporary("upper");
  const std::string biasValue = c.scalar(dtype, bias, "bias");
  binary(c, "TL_SUM", x, biasValue, raised);
  binary(c, "TL_SUB", x, biasValue, lowered);
  c.emit("where", {{"condition", above}, {"src1", lowered}, {"src2", c.scalar(dtype, 0, "zero")}}, {{"dst", upper}});
  c.emit("where", {{"condition", below}, {"src1", raised}, {"src2", upper}}, {{"dst", c.output(0)}});
  c.keepScalarOutput(0);
}

void convertRelu(Converter& c) { unary(c, "relu"); }

void convertSigmoid(Converter& c) { unary(c, "sigmoid"); }

void convertLeakyRelu(Converter& c) {
  unary(c, "lrelu", {numberParam("negslope", c.attributes().number("alpha", 0.01f))});
}

void convertClip(Converter& c) {
  auto [low, high] = dtypeRange(c.dtype(0));
  if (c.opset() < 11) {
    low = std::max<double>(low, c.attributes().number("min", std::numeric_limits<float>::lowest()));
    high = std::min<double>(high, c.attributes().number("max", std::numeric_limits<float>::max()));
  } else {
    if (c.hasInput(1)) low = scalarInput(c, 1, "min");
    if (c.hasInput(2)) high = scalarInput(c, 2, "max");
  }
  if (low > high) low = high;  // ONNX: every value becomes max when min > max
  unary(c, "clip", {numberParam("min", low), numberParam("max", high)});
}

// Softmax and LogSoftmax.
void convertSoftmax(Converter& c) {
  const std::string optype = c.node().op_type() == "Softmax" ? "softmax" : "log_softmax";
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const int64_t axis = normalizeAxis(c, c.attributes().integer("axis", c.opset() < 13 ? 1 : -1), in.size());
  if (c.opset() >= 13 || axis == static_cast<int64_t>(in.size()) - 1) {
    unary(c, optype, {numberParam("axis", static_cast<double>(axis))});
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized over the whole row.
  const std::string rows = c.temporary("rows");
  c.emit("flatten", {{"src", c.tensor(0)}}, {{"dst", rows}}, {numberParam("axis", static_cast<double>(axis))});
  const std::string normalized = c.temporary(optype);
  c.emit(optype, {{"src", rows}}, {{"dst", normalized}}, {numberParam("axis", 1)});
  c.emit("reshape", {{"src", normalized}}, {{"dst", c.output(0)}}, {integersParam("dims", in)});
}

void convertGemm(Converter& c) {
  const std::string c3 = c.hasInput(2) ? c.tensor(2) : c.zeros(c.dtype(0), {1}, "zero_c");
  c.emit("gemm", {{"a", c.tensor(0)}, {"b", c.tensor(1)}, {"c", c3}}, {{"dst", c.output(0)}},
         {numberParam("alpha", c.attributes().number("alpha", 1.0f)),
          numberParam("beta", c.attributes().number("beta", 1.0f)),
          boolParam("trans_a", c.attributes().integer("transA", 0) != 0),
          boolParam("trans_b", c.attributes().integer("transB", 0) != 0)});
}

namespace {

// Input 0 as `to` into output 0 (the same tensor when it is `to` already).
void castOutput(Converter& c, ir::DType to) {
  if (to == c.dtype(0)) return c.alias(0, c.tensor(0));
  c.emit("cast", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {stringParam("dtype", std::string(ir::dtypeName(to)))});
  c.keepScalarOutput(0);
}

}  // namespace

void convertCast(Converter& c) {
  const auto to = dtypeFromOnnx(static_cast<int32_t>(c.attributes().integer("to", 0)));
  if (!to) c.attributes().fail("to", "names an unsupported element type");
  // A float16 weight cast to float (a half-precision export that computes in float): too big to
  // fold (the float copy would double it), so the weight keeps its float16 bytes, read as float
  // and widened once when a program is built, instead of a cast at every inference. Its bytes
  // stay a view of the external data; -convert-to-fp16 and -mxfp6-matmul read them from there.
  if (const ImportedTensor* weight = c.constant(0); *to == ir::DType::Float && weight != nullptr &&
                                                    weight->dtype == ir::DType::Float16 && c.hasOutput(0) &&
                                                    !weight->dims.empty()) {
    return c.alias(0, c.constantTensor(*weight, weight->name, ir::DType::Float));
  }
  castOutput(c, *to);
}

// CastLike: Cast to the element type of the second input (only its type is read).
void convertCastLike(Converter& c) {
  if (c.attributes().integer("saturate", 1) != 1) c.attributes().fail("saturate", "applies to float8 types only");
  castOutput(c, c.dtype(1));
}

// LayerNormalization (opset 17): scale and bias broadcast to the normalized dims.
namespace {

// The mean of `src` over `axes`, dims kept, into `dst`.
void emitMean(Converter& c, const std::string& src, const std::vector<int64_t>& axes, const std::string& dst) {
  c.emit("reduce", {{"src", src}}, {{"dst", dst}},
         {stringParam("reduce_op", "mean"), integersParam("axes", axes), boolParam("keepdims", true)});
}

// x - mean, and the mean of its square over `axes` (the variance, dims kept).
struct Deviations {
  std::string centered, variance;
};

Deviations deviationsFrom(Converter& c, const std::string& x, const std::string& mean,
                          const std::vector<int64_t>& axes) {
  const Deviations d{c.temporary("centered"), c.temporary("variance")};
  const std::string squared = c.temporary("squared");
  binary(c, "TL_SUB", x, mean, d.centered);
  binary(c, "TL_MUL", d.centered, d.centered, squared);
  emitMean(c, squared, axes, d.variance);
  return d;
}

}  // namespace

// Mean and InvStdDev, when asked for, come from ops of their own: the layernorm op computes
// neither as an output.
void convertLayerNormalization(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const auto axis = static_cast<std::size_t>(normalizeAxis(c, c.attributes().integer("axis", -1), in.size()));
  const ir::Dims normalized(in.begin() + static_cast<std::ptrdiff_t>(axis), in.end());
  const auto fitted = [&](std::size_t i, const std::string& role) {
    if (!c.hasInput(i)) return c.zeros(c.dtype(0), normalized, role);
    if (c.dtype(i) != c.dtype(0)) c.fail(role + " differs from the input in element type");
    if (irDims(c.dims(i)) == normalized) return c.tensor(i);
    const std::string expanded = c.temporary(role);
    c.emit("expand", {{"src", c.tensor(i)}}, {{"dst", expanded}}, {integersParam("dims", normalized)});
    return expanded;
  };
  const std::string scale = fitted(1, "scale");
  const std::string bias = fitted(2, "bias");
  const float epsilon = c.attributes().number("epsilon", 1e-5f);
  emitLayerNorm(c, c.tensor(0), scale, bias, axis, epsilon, c.output(0));
  if (!c.hasOutput(1) && !c.hasOutput(2)) return;
  std::vector<int64_t> axes;
  for (std::size_t i = axis; i < in.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  const std::string x = c.tensor(0);
  const std::string mean = c.hasOutput(1) ? c.output(1) : c.temporary("mean");
  emitMean(c, x, axes, mean);
  if (!c.hasOutput(2)) return;
  const Deviations d = deviationsFrom(c, x, mean, axes);
  const std::string shifted = c.temporary("shifted"), deviation = c.temporary("deviation");
  binary(c, "TL_SUM", d.variance, c.scalar(c.dtype(0), epsilon, "epsilon"), shifted);
  unaryFunction(c, "sqrt", shifted, deviation);
  unaryFunction(c, "reciprocal", deviation, c.output(2));
}

namespace {

// Normalizes each of `groups` channel groups of every sample over its channels and positions,
// then scales and shifts by `scale` and B: per channel ([C]) or, with `perGroup`, per group ([G]).
// The groups are rows of an [N*G, rest] view for the layernorm op (unit scale, zero bias); the
// scale and bias broadcast over the result.
void emitGroupNorm(Converter& c, int64_t groups, bool perGroup) {
  const ir::Dims in = c.dims(0);
  if (in.size() < 3) c.fail("input must have rank >= 3 ([N, C, D1, ...])");
  requireSameTypes(c);
  const int64_t channels = in[1];
  const ir::Dims expected{perGroup ? groups : channels};
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    if (irDims(c.dims(i)) != expected)
      c.fail(std::string(i == 1 ? "scale" : "B") + " must have dims [" + std::to_string(expected[0]) + "] (one per " +
             (perGroup ? "group" : "channel") + ")");
  }
  int64_t groupSize = channels / groups;
  for (std::size_t i = 2; i < in.size(); ++i) groupSize *= in[i];
  const ir::DType dtype = c.dtype(0);
  const std::string rows = c.reshaped(c.tensor(0), {in[0] * groups, groupSize}, "groups");
  const std::string unitScale = c.constantTensor(
      fromDoubles("", dtype, {groupSize}, std::vector<double>(static_cast<std::size_t>(groupSize), 1.0)),
      c.label() + "/unit_scale");
  const std::string normalized = c.temporary("normalized");
  emitLayerNorm(c, rows, unitScale, c.zeros(dtype, {groupSize}, "zero_bias"), 1,
                c.attributes().number("epsilon", 1e-5f), normalized);
  // Per channel: [C, 1, ...] against [N, C, D1, ...]; per group: [G, 1] against [N, G, rest].
  const ir::Dims shape = perGroup ? ir::Dims{in[0], groups, groupSize} : in;
  ir::Dims each(shape.size() - 1, 1);
  each[0] = shape[1];
  const std::string scaled = c.temporary("scaled");
  binary(c, "TL_MUL", c.reshaped(normalized, shape, "normalized"), c.reshaped(c.tensor(1), each, "scale"), scaled);
  if (!perGroup) return binary(c, "TL_SUM", scaled, c.reshaped(c.tensor(2), each, "bias"), c.output(0));
  const std::string shifted = c.temporary("shifted");
  binary(c, "TL_SUM", scaled, c.reshaped(c.tensor(2), each, "bias"), shifted);
  c.reshapeInto(0, shifted, in);
}

}  // namespace

// InstanceNormalization: every (n, c) plane normalized over its spatial axes, then scaled and
// shifted per channel: groups of one channel. PyTorch exports InstanceNorm and GroupNorm (on an
// [N, G, -1] view) this way.
void convertInstanceNormalization(Converter& c) { emitGroupNorm(c, c.dims(0).size() >= 2 ? c.dims(0)[1] : 1, false); }

// GroupNormalization: opset 21 scales per channel; opset 18 specified scale and bias per group,
// and exporters wrote either, so their length decides there.
void convertGroupNormalization(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.size() < 3) c.fail("input must have rank >= 3 ([N, C, D1, ...])");
  const int64_t groups = c.attributes().integer("num_groups", 0);
  if (groups < 1 || in[1] % groups != 0)
    c.attributes().fail("num_groups",
                        "is " + std::to_string(groups) + "; it must divide the " + std::to_string(in[1]) + " channels");
  if (c.attributes().integer("stash_type", 1) != 1) c.attributes().fail("stash_type", "must be 1 (float)");
  const bool perGroup = c.opset() < 21 && irDims(c.dims(1)) == ir::Dims{groups};
  emitGroupNorm(c, groups, perGroup);
}

// MeanVarianceNormalization: (x - mean) / (standard deviation + 1e-9) over `axes` (default N
// and the spatial axes of NCHW). The variance is taken of the centred values, which is
// the function body's E[x^2] - E[x]^2 without its cancellation.
void convertMeanVarianceNormalization(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  if (!ir::rules::isFloating(c.dtype(0))) c.fail("input must be of a floating type");
  const auto given = c.attributes().integers("axes");
  if (!given && in.size() != 4) c.attributes().fail("axes", "must be given for an input of rank other than 4");
  const std::vector<int64_t> axes = distinctAxes(c, given.value_or(std::vector<int64_t>{0, 2, 3}), in.size());
  const std::string mean = c.temporary("mean"), deviation = c.temporary("deviation"), shifted = c.temporary("shifted");
  emitMean(c, c.tensor(0), axes, mean);
  const Deviations d = deviationsFrom(c, c.tensor(0), mean, axes);
  unaryFunction(c, "sqrt", d.variance, deviation);
  binary(c, "TL_SUM", deviation, c.scalar(c.dtype(0), 1e-9, "epsilon"), shifted);
  binary(c, "TL_DIV", d.centered, shifted, c.output(0));
}

void emitLayerNorm(Converter& c, const std::string& src, const std::string& scale, const std::string& bias,
                   std::size_t axis, double epsilon, const std::string& dst) {
  if (!(epsilon > 0)) c.fail("epsilon must be > 0");
  c.emit("layernorm", {{"src", src}, {"scale", scale}, {"bias", bias}}, {{"dst", dst}},
         {numberParam("axis", static_cast<double>(axis)), numberParam("epsilon", epsilon)});
}

void convertMatMul(Converter& c) {
  c.emit("matmul", {{"src1", c.tensor(0)}, {"src2", c.tensor(1)}}, {{"dst", c.output(0)}});
}

}  // namespace qaic::onnx
