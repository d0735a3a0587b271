// SPDX-License-Identifier: Apache-2.0
// The quantization operators, as element-wise IR ops computing exactly the arithmetic the
// operators define.
// - QuantizeLinear and DequantizeLinear, the QDQ form in which quantization tools (ONNX
//   Runtime's quantize_static, PyTorch's QAT exports) write int8 networks, in float:
//     QuantizeLinear:   y = saturate(round_half_to_even(x / scale) + zero_point)
//     DequantizeLinear: y = (x - zero_point) * scale
//   A DequantizeLinear of constant weights is evaluated at import time (float weights); the
//   rest runs as ops. Per-tensor scales broadcast; per-axis ones are reshaped onto `axis`.
// - DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, ONNX Runtime's dynamic quantization
//   (quantize_dynamic of transformers) and its QOperator matrix product: the activation's uint8
//   range from its own min and max, and an int32 product of the zero-point-shifted operands
//   (integer matmul, exact), which QLinearMatMul then scales and quantizes.
// - QLinearConv, the QOperator convolution of ONNX Runtime's static quantization (the int8 CNNs
//   of the ONNX model zoo): the zero-point-shifted operands convolved in float (exact while a
//   sum stays below 2^24 in magnitude), plus the int32 bias, scaled per output channel and
//   quantized. Constant weights are shifted at import time, so the conv packs them once.
#include <onnx/onnx_pb.h>

#include <cctype>
#include <limits>
#include <utility>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

// The IR's name of an element type, for a cast's param.
std::string irType(ir::DType dtype) { return std::string(ir::dtypeName(dtype)); }

// ONNX's way to write it in a message: "TL_UINT8" is uint8.
std::string typeText(ir::DType dtype) {
  std::string name = irType(dtype);
  if (name.rfind("TL_", 0) == 0) name.erase(0, 3);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// `tensor` in float (cast when it is not).
std::string inFloat(Converter& c, const std::string& tensor, const std::string& hint) {
  if (c.tensorDType(tensor) == ir::DType::Float) return tensor;
  const std::string cast = c.temporary(hint);
  c.emit("cast", {{"src", tensor}}, {{"dst", cast}}, {stringParam("dtype", irType(ir::DType::Float))});
  return cast;
}

// Input i (the scale or the zero point) in a shape that broadcasts against input 0: as given
// when it is one value, reshaped to [1, .., n, .., 1] on `axis` when it holds one value per
// element of that axis. Fails naming the input otherwise.
std::string fitted(Converter& c, std::size_t i, const std::string& role) {
  const ir::Dims x = c.dims(0);
  const ir::Dims given = c.dims(i);
  const int64_t count = ir::elementCount(given);
  if (given.size() <= 1 && count == 1) return c.tensor(i);
  if (c.opset() < 13) c.fail(role + " must be a scalar before opset 13 (per-axis quantization came with it)");
  if (c.attributes().integer("block_size", 0) != 0) c.attributes().fail("block_size", "is not supported");
  if (given.size() != 1) c.fail(role + " must be a scalar or 1-D (blocked quantization is not supported)");
  const auto axis = static_cast<std::size_t>(normalizeAxis(c, c.attributes().integer("axis", 1), x.size()));
  if (x[axis] != count) {
    c.fail(role + " has " + std::to_string(count) + " values; axis " + std::to_string(axis) + " of the input has " +
           std::to_string(x[axis]));
  }
  ir::Dims shape(x.size(), 1);
  shape[axis] = count;
  return c.reshaped(c.tensor(i), shape, role);
}

// The range a quantized type saturates to.
std::pair<double, double> quantizedRange(Converter& c, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::UInt8: return {0, std::numeric_limits<uint8_t>::max()};
    case ir::DType::Int8: return {std::numeric_limits<int8_t>::lowest(), std::numeric_limits<int8_t>::max()};
    case ir::DType::UInt16: return {0, std::numeric_limits<uint16_t>::max()};
    case ir::DType::Int16: return {std::numeric_limits<int16_t>::lowest(), std::numeric_limits<int16_t>::max()};
    default: break;
  }
  c.fail("quantizing to " + typeText(dtype) + " is not supported (int8, uint8, int16, uint16)");
}

// The operands of the integer matrix products.
void requireEightBit(Converter& c, std::size_t i, const std::string& role) {
  const ir::DType dtype = c.dtype(i);
  if (dtype != ir::DType::UInt8 && dtype != ir::DType::Int8)
    c.fail(role + " must be uint8 or int8, not " + typeText(dtype));
}

void requireFloatScale(Converter& c, std::size_t i, const std::string& role) {
  const ir::DType dtype = c.dtype(i);
  if (dtype != ir::DType::Float && dtype != ir::DType::Float16)
    c.fail(role + " must be float or float16, not " + typeText(dtype));
}

// Quantized types the IR has no element type for (float8, int4, uint4) are refused by the
// importer's type check before a handler runs; the attribute ONNX 19 added for float8 means
// nothing for the integer types.
void requireSaturateDefault(Converter& c) {
  if (c.attributes().integer("saturate", 1) != 1) c.attributes().fail("saturate", "applies to float8 types only");
}

// `tensor` as int32 minus its zero point (input i, cast to int32), when there is one. A zero
// point of one value per row of a 2-D A ([M]) is reshaped to [M, 1]; one per column of B ([N])
// broadcasts as it is.
std::string shiftedInt32(Converter& c, std::size_t operand, std::size_t zeroPointInput, const std::string& role) {
  std::string value = c.temporary(role + "_int32");
  c.emit("cast", {{"src", c.tensor(operand)}}, {{"dst", value}}, {stringParam("dtype", irType(ir::DType::Int32))});
  if (!c.hasInput(zeroPointInput)) return value;
  if (c.dtype(zeroPointInput) != c.dtype(operand))
    c.fail(role + "_zero_point is " + typeText(c.dtype(zeroPointInput)) + "; " + role + " is " +
           typeText(c.dtype(operand)));
  const ir::Dims dims = c.dims(operand);
  const ir::Dims zeroDims = c.dims(zeroPointInput);
  std::string zeroPoint = c.tensor(zeroPointInput);
  const int64_t count = ir::elementCount(zeroDims);
  if (count != 1) {
    const bool perRowOfA = role == "a" && dims.size() == 2 && zeroDims.size() == 1 && count == dims[0];
    const bool perColumnOfB = role == "b" && dims.size() == 2 && zeroDims.size() == 1 && count == dims[1];
    if (!perRowOfA && !perColumnOfB)
      c.fail(role + "_zero_point must be one value, or one per " +
             (role == "a" ? "row of a 2-D a" : "column of a 2-D b"));
    if (perRowOfA) zeroPoint = c.reshaped(zeroPoint, {count, 1}, role + "_zero_point");
  }
  const std::string zeroInt32 = c.temporary(role + "_zero_point_int32");
  c.emit("cast", {{"src", zeroPoint}}, {{"dst", zeroInt32}}, {stringParam("dtype", irType(ir::DType::Int32))});
  const std::string shifted = c.temporary(role + "_shifted");
  binary(c, "TL_SUB", value, zeroInt32, shifted);
  return shifted;
}

std::string roundedHalfToEven(Converter& c, const std::string& src, const std::string& hint) {
  const std::string dst = c.temporary(hint);
  unaryFunction(c, "round", src, dst);
  return dst;
}

// The last steps of every quantization, into `dst`: `value` (float) rounded half to even, plus
// `zeroPoint` (a float tensor; none when empty), saturated to `outType`'s range, cast to it.
void emitQuantized(Converter& c, const std::string& value, const std::string& zeroPoint, ir::DType outType,
                   const std::string& dst) {
  const auto [low, high] = quantizedRange(c, outType);
  std::string current = roundedHalfToEven(c, value, "rounded");
  if (!zeroPoint.empty()) {
    const std::string shifted = c.temporary("shifted");
    binary(c, "TL_SUM", current, zeroPoint, shifted);
    current = shifted;
  }
  const std::string saturated = c.temporary("saturated");
  c.emit("clip", {{"src", current}}, {{"dst", saturated}}, {numberParam("min", low), numberParam("max", high)});
  c.emit("cast", {{"src", saturated}}, {{"dst", dst}}, {stringParam("dtype", irType(outType))});
}

// The QOperator ops' last steps, into output 0: `accumulated` (the integer product or conv, with
// its bias) times a_scale * b_scale / y_scale, quantized with y_zero_point (input `yZeroPoint`,
// if given) to `outType`. `bScale` may be per channel, shaped to broadcast.
void emitRequantized(Converter& c, const std::string& accumulated, const std::string& aScale, const std::string& bScale,
                     std::size_t yScale, std::size_t yZeroPoint, ir::DType outType) {
  const std::string scaleProduct = c.temporary("scale_product");
  binary(c, "TL_MUL", aScale, bScale, scaleProduct);
  const std::string multiplier = c.temporary("multiplier");
  binary(c, "TL_DIV", scaleProduct, inFloat(c, c.tensor(yScale), "y_scale_float"), multiplier);
  const std::string scaled = c.temporary("scaled");
  binary(c, "TL_MUL", inFloat(c, accumulated, "accumulated_float"), multiplier, scaled);
  emitQuantized(c, scaled, c.hasInput(yZeroPoint) ? inFloat(c, c.tensor(yZeroPoint), "y_zero_point_float") : "",
                outType, c.output(0));
}

}  // namespace

void convertMatMulInteger(Converter& c) {
  requireEightBit(c, 0, "A");
  requireEightBit(c, 1, "B");
  const std::string a = shiftedInt32(c, 0, 2, "a");
  const std::string b = shiftedInt32(c, 1, 3, "b");
  c.emit("matmul", {{"src1", a}, {"src2", b}}, {{"dst", c.output(0)}});
}

// QLinearMatMul: y = saturate(round(C * (a_scale * b_scale / y_scale)) + y_zero_point), with C the
// exact int32 product of the zero-point-shifted operands (MatMulInteger's); per-tensor scales.
void convertQLinearMatMul(Converter& c) {
  requireEightBit(c, 0, "a");
  requireEightBit(c, 3, "b");
  const std::vector<std::pair<std::size_t, std::string>> scales = {{1, "a_scale"}, {4, "b_scale"}, {6, "y_scale"}};
  for (const auto& [i, role] : scales) {
    requireFloatScale(c, i, role);
    if (ir::elementCount(c.dims(i)) != 1) c.fail(role + " must be one value (per-tensor quantization)");
  }
  const ir::DType outType = c.dtype(7);
  quantizedRange(c, outType);  // refused before anything is emitted
  if (ir::elementCount(c.dims(7)) != 1) c.fail("y_zero_point must be one value (per-tensor quantization)");

  const std::string a = shiftedInt32(c, 0, 2, "a");
  const std::string b = shiftedInt32(c, 3, 5, "b");
  const std::string product = c.temporary("product");
  c.emit("matmul", {{"src1", a}, {"src2", b}}, {{"dst", product}});
  emitRequantized(c, product, inFloat(c, c.tensor(1), "a_scale_float"), inFloat(c, c.tensor(4), "b_scale_float"), 6, 7,
                  outType);
}

// QLinearConv: y = saturate(round((conv(x - x_zero_point, w - w_zero_point) + B) * x_scale *
// w_scale / y_scale) + y_zero_point); w's scale and zero point per tensor or per output channel.
void convertQLinearConv(Converter& c) {
  requireEightBit(c, 0, "x");
  requireEightBit(c, 3, "w");
  for (const auto& [i, role] :
       std::vector<std::pair<std::size_t, std::string>>{{1, "x_scale"}, {4, "w_scale"}, {6, "y_scale"}})
    requireFloatScale(c, i, role);
  const ir::Dims in = c.dims(0), weightDims = c.dims(3);
  if (weightDims.size() < 3) c.fail("w must be [M, C/group, k1..kn]");
  const int64_t outChannels = weightDims[0];
  const auto oneOrPerChannel = [&](std::size_t i, const std::string& role) {
    const int64_t count = ir::elementCount(c.dims(i));
    if (count != 1 && !(c.dims(i).size() == 1 && count == outChannels))
      c.fail(role + " must be one value or one per output channel (" + std::to_string(outChannels) + ")");
    return count;
  };
  for (const auto& [i, role] : std::vector<std::pair<std::size_t, std::string>>{{1, "x_scale"}, {6, "y_scale"}}) {
    if (ir::elementCount(c.dims(i)) != 1) c.fail(role + " must be one value (per-tensor quantization)");
  }
  if (c.hasInput(2) && ir::elementCount(c.dims(2)) != 1) c.fail("x_zero_point must be one value");
  if (c.hasInput(7) && ir::elementCount(c.dims(7)) != 1) c.fail("y_zero_point must be one value");
  const int64_t weightScales = oneOrPerChannel(4, "w_scale");
  const int64_t weightZeros = c.hasInput(5) ? oneOrPerChannel(5, "w_zero_point") : 1;
  if (c.hasInput(2) && c.dtype(2) != c.dtype(0)) c.fail("x_zero_point's type differs from x's");
  if (c.hasInput(5) && c.dtype(5) != c.dtype(3)) c.fail("w_zero_point's type differs from w's");
  const ir::DType outType = c.hasInput(7) ? c.dtype(7) : ir::DType::UInt8;
  quantizedRange(c, outType);  // refused before anything is emitted
  if (c.hasInput(8) && (c.dtype(8) != ir::DType::Int32 || irDims(c.dims(8)) != ir::Dims{outChannels}))
    c.fail("B must be int32 with one value per output channel (" + std::to_string(outChannels) + ")");
  std::vector<ir::Param> params = convParams(c, in, weightDims);

  // Per output channel, [M, 1, ...] against the weight and [1, M, 1, ...] against the result.
  ir::Dims perWeight(weightDims.size(), 1), perOutput(in.size(), 1);
  perWeight[0] = outChannels;
  perOutput[1] = outChannels;
  const auto perChannel = [&](std::size_t i, int64_t count, const ir::Dims& shape, const std::string& hint) {
    const std::string value = inFloat(c, c.tensor(i), hint);
    return count == 1 ? value : c.reshaped(value, shape, hint + "_per_channel");
  };

  // x - x_zero_point, in float.
  std::string x = inFloat(c, c.tensor(0), "x_float");
  if (c.hasInput(2)) {
    const std::string shifted = c.temporary("x_shifted");
    binary(c, "TL_SUB", x, inFloat(c, c.tensor(2), "x_zero_point_float"), shifted);
    x = shifted;
  }
  // w - w_zero_point: folded when both are constants (the usual case), else computed.
  std::string weight;
  const ImportedTensor* constantWeight = c.constant(3);
  const ImportedTensor* constantZero = c.hasInput(5) ? c.constant(5) : nullptr;
  if (constantWeight != nullptr && (!c.hasInput(5) || constantZero != nullptr)) {
    std::vector<double> values = toDoubles(*constantWeight);
    const std::vector<double> zeros = constantZero ? toDoubles(*constantZero) : std::vector<double>{0.0};
    const std::size_t perFilter = values.size() / static_cast<std::size_t>(outChannels);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] -= zeros.size() == 1 ? zeros[0] : zeros[i / perFilter];
    weight = c.constantTensor(fromDoubles("", ir::DType::Float, weightDims, values), c.label() + "/shifted_weight");
  } else {
    weight = inFloat(c, c.tensor(3), "w_float");
    if (c.hasInput(5)) {
      const std::string shifted = c.temporary("w_shifted");
      binary(c, "TL_SUB", weight, perChannel(5, weightZeros, perWeight, "w_zero_point"), shifted);
      weight = shifted;
    }
  }
  const std::string bias = c.hasInput(8) ? inFloat(c, c.tensor(8), "bias_float")
                                         : c.zeros(ir::DType::Float, {outChannels}, "zero_bias");
  const std::string accumulated = c.temporary("accumulated");
  c.emit("conv", {{"src", x}, {"weight", weight}, {"bias", bias}}, {{"dst", accumulated}}, std::move(params));

  emitRequantized(c, accumulated, inFloat(c, c.tensor(1), "x_scale_float"),
                  perChannel(4, weightScales, perOutput, "w_scale"), 6, 7, outType);
}

// DynamicQuantizeLinear: y_scale = (max(x, 0) - min(x, 0)) / 255 over the whole tensor,
// y_zero_point = round(saturate(-min / y_scale)), y = saturate(round(x / y_scale) + zero point),
// all uint8; the scale and zero point are scalars.
void convertDynamicQuantizeLinear(Converter& c) {
  if (c.dtype(0) != ir::DType::Float) c.fail("x must be float, not " + typeText(c.dtype(0)));
  const ir::Dims dims = c.dims(0);
  std::vector<int64_t> all(dims.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const std::string x = c.tensor(0);
  const std::string zero = c.scalar(ir::DType::Float, 0, "zero");
  const auto extreme = [&](const std::string& which) {
    std::string value = x;
    if (!all.empty()) {
      value = c.temporary(which);
      c.emit("reduce", {{"src", x}}, {{"dst", value}},
             {stringParam("reduce_op", which), integersParam("axes", all), boolParam("keepdims", false)});
    }
    const std::string withZero = c.temporary(which + "_with_zero");
    binary(c, which == "max" ? "TL_MAX" : "TL_MIN", value, zero, withZero);
    return withZero;
  };
  const std::string high = extreme("max");
  const std::string low = extreme("min");
  const std::string range = c.temporary("range");
  binary(c, "TL_SUB", high, low, range);
  const std::string scale = c.temporary("scale");
  binary(c, "TL_DIV", range, c.scalar(ir::DType::Float, 255, "levels"), scale);

  // The zero point: -low / scale, saturated to [0, 255], rounded.
  const std::string negated = c.temporary("negated_min");
  binary(c, "TL_SUB", zero, low, negated);
  const std::string unrounded = c.temporary("zero_point_unsaturated");
  binary(c, "TL_DIV", negated, scale, unrounded);
  const std::string saturatedZero = c.temporary("zero_point_saturated");
  c.emit("clip", {{"src", unrounded}}, {{"dst", saturatedZero}}, {numberParam("min", 0), numberParam("max", 255)});
  const std::string zeroPoint = roundedHalfToEven(c, saturatedZero, "zero_point_float");

  const std::string divided = c.temporary("divided");
  binary(c, "TL_DIV", x, scale, divided);
  emitQuantized(c, divided, zeroPoint, ir::DType::UInt8, c.output(0));
  c.keepScalarOutput(0);
  if (c.hasOutput(1)) c.reshapeInto(1, scale, {});
  if (c.hasOutput(2)) {
    const std::string zeroUint8 = c.temporary("zero_point");
    c.emit("cast", {{"src", zeroPoint}}, {{"dst", zeroUint8}}, {stringParam("dtype", irType(ir::DType::UInt8))});
    c.reshapeInto(2, zeroUint8, {});
  }
}

void convertQuantizeLinear(Converter& c) {
  requireFloatScale(c, 1, "y_scale");
  requireSaturateDefault(c);
  const ir::DType xType = c.dtype(0);
  if (xType != ir::DType::Float && xType != ir::DType::Float16 && xType != ir::DType::Int32)
    c.fail("x must be float, float16 or int32, not " + typeText(xType));
  // The zero point's type, else (opset 21) output_dtype, else uint8.
  ir::DType outType = c.hasInput(2) ? c.dtype(2) : ir::DType::UInt8;
  if (c.attributes().has("output_dtype")) {
    const auto named = dtypeFromOnnx(static_cast<int32_t>(c.attributes().integer("output_dtype", 0)));
    if (!named) c.attributes().fail("output_dtype", "names an element type the IR does not have");
    if (c.hasInput(2) && *named != outType)
      c.attributes().fail("output_dtype", "is " + typeText(*named) + "; y_zero_point is " + typeText(outType));
    outType = *named;
  }
  quantizedRange(c, outType);  // refused before anything is emitted

  const std::string x = inFloat(c, c.tensor(0), "x_float");
  const std::string scale = inFloat(c, fitted(c, 1, "y_scale"), "y_scale_float");
  const std::string divided = c.temporary("divided");
  binary(c, "TL_DIV", x, scale, divided);
  const std::string zeroPoint = c.hasInput(2) ? inFloat(c, fitted(c, 2, "y_zero_point"), "y_zero_point_float") : "";
  emitQuantized(c, divided, zeroPoint, outType, c.output(0));
  c.keepScalarOutput(0);
}

void convertDequantizeLinear(Converter& c) {
  requireFloatScale(c, 1, "x_scale");
  const ir::DType xType = c.dtype(0);
  if (xType != ir::DType::Int8 && xType != ir::DType::UInt8 && xType != ir::DType::Int16 &&
      xType != ir::DType::UInt16 && xType != ir::DType::Int32)
    c.fail("x must be int8, uint8, int16, uint16 or int32, not " + typeText(xType));
  if (c.hasInput(2) && c.dtype(2) != xType)
    c.fail("x_zero_point is " + typeText(c.dtype(2)) + "; x is " + typeText(xType));

  std::string value = inFloat(c, c.tensor(0), "x_float");
  if (c.hasInput(2)) {
    const std::string zeroPoint = inFloat(c, fitted(c, 2, "x_zero_point"), "x_zero_point_float");
    const std::string shifted = c.temporary("shifted");
    binary(c, "TL_SUB", value, zeroPoint, shifted);
    value = shifted;
  }
  const std::string scale = inFloat(c, fitted(c, 1, "x_scale"), "x_scale_float");
  const ir::DType outType = c.dtype(1);  // the scale's type
  if (outType == ir::DType::Float) {
    binary(c, "TL_MUL", value, scale, c.output(0));
  } else {
    const std::string scaled = c.temporary("scaled");
    binary(c, "TL_MUL", value, scale, scaled);
    c.emit("cast", {{"src", scaled}}, {{"dst", c.output(0)}}, {stringParam("dtype", irType(outType))});
  }
  c.keepScalarOutput(0);
}

}  // namespace qaic::onnx
