// Element-wise arithmetic, activations, Clip, Softmax, Gemm and MatMul.
#include <onnx/onnx_pb.h>

#include <limits>
#include <map>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

const std::map<std::string, std::string, std::less<>>& elewOps() {
  static const std::map<std::string, std::string, std::less<>> ops = {
      {"Add", "TL_SUM"}, {"Sub", "TL_SUB"}, {"Mul", "TL_MUL"}, {"Div", "TL_DIV"}};
  return ops;
}

void unary(Converter& c, const std::string& optype, std::vector<ir::Param> params = {}) {
  c.emit(optype, {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, std::move(params));
  c.keepScalarOutput(0);
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

int64_t normalizeAxis(Converter& c, int64_t axis, std::size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) c.attributes().fail("axis", std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

}  // namespace

void convertBinaryElementwise(Converter& c) {
  if (c.opset() < 7 && c.attributes().has("axis")) c.fail("legacy broadcasting with an axis (opset < 7) is not supported");
  const std::string& elewOp = elewOps().find(c.node().op_type())->second;
  const bool sameShape = c.dims(0) == c.dims(1);
  c.emit(sameShape ? "elew" : "elew_bcast", {{"src1", c.tensor(0)}, {"src2", c.tensor(1)}}, {{"dst", c.output(0)}},
         {stringParam("elew_op", elewOp)});
  c.keepScalarOutput(0);
}

void convertRelu(Converter& c) { unary(c, "relu"); }

void convertSigmoid(Converter& c) { unary(c, "sigmoid"); }

void convertLeakyRelu(Converter& c) { unary(c, "lrelu", {numberParam("negslope", c.attributes().number("alpha", 0.01f))}); }

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

void convertSoftmax(Converter& c) {
  const ir::Dims in = c.dims(0);
  const int64_t axis = normalizeAxis(c, c.attributes().integer("axis", c.opset() < 13 ? 1 : -1), in.size());
  if (c.opset() >= 13 || axis == static_cast<int64_t>(in.size()) - 1) {
    unary(c, "softmax", {numberParam("axis", static_cast<double>(axis))});
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized over the whole row.
  const std::string rows = c.temporary("rows");
  c.emit("flatten", {{"src", c.tensor(0)}}, {{"dst", rows}}, {numberParam("axis", static_cast<double>(axis))});
  const std::string normalized = c.temporary("softmax");
  c.emit("softmax", {{"src", rows}}, {{"dst", normalized}}, {numberParam("axis", 1)});
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

void convertCast(Converter& c) {
  const auto to = dtypeFromOnnx(static_cast<int32_t>(c.attributes().integer("to", 0)));
  if (!to) c.attributes().fail("to", "names an unsupported element type");
  if (*to == c.dtype(0)) return c.alias(0, c.tensor(0));
  c.emit("cast", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, {stringParam("dtype", std::string(ir::dtypeName(*to)))});
  c.keepScalarOutput(0);
}

void convertMatMul(Converter& c) {
  c.emit("matmul", {{"src1", c.tensor(0)}, {"src2", c.tensor(1)}}, {{"dst", c.output(0)}});
}

}  // namespace qaic::onnx
