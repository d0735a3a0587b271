// SPDX-License-Identifier: Apache-2.0
// Which ONNX operators the importer understands, and how. One entry per operator: `convert`
// emits IR ops; `fold` computes the outputs at import time instead (Shape, Constant, Range, ...),
// returning false when it cannot so that `convert` runs. A node whose inputs are all known at
// import time is evaluated through its `convert` ops on the host executor (Converter.cpp), so
// no operator needs an import-time implementation of its own.
//
// The entry also declares the IR optypes its conversion may emit (`create` is always allowed)
// and the attributes it understands: the converter rejects an undeclared emission, every other
// attribute is reported as unsupported, and tests/unit/onnx/OperatorRegistriesTest.cpp checks
// that every declared IR optype has a shape rule and a host kernel. The claimed operator list
// of the conformance suite is this table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::onnx {

class Converter;

struct OperatorEntry {
  void (*convert)(Converter&) = nullptr;
  bool (*fold)(Converter&) = nullptr;
  std::vector<std::string_view> irOps;       // optypes `convert` may emit besides `create`
  std::vector<std::string_view> attributes;  // every attribute it understands
  bool foldWithoutConstantInputs = false;    // Shape, Size: need only their input's dims
  bool selectsBranch = false;                // If: the converter converts the branch it selects
};

const OperatorEntry* findOperator(std::string_view opType);
// Every operator type the table above knows, sorted (qaic-exec -operators-supported).
std::vector<std::string> supportedOperators();

// Handlers, one per ONNX operator family.
void convertConv(Converter&);
void convertConvTranspose(Converter&);
void convertMaxPool(Converter&);
void convertMaxUnpool(Converter&);
void convertAveragePool(Converter&);
void convertGlobalAveragePool(Converter&);
void convertGlobalMaxPool(Converter&);
void convertBatchNormalization(Converter&);
void convertLayerNormalization(Converter&);
void convertMeanVarianceNormalization(Converter&);
void convertShrink(Converter&);
void convertCumSum(Converter&);
void convertIsNaN(Converter&);
void convertIsInf(Converter&);
void convertOneHot(Converter&);
void convertLstm(Converter&);
void convertGru(Converter&);
void convertRnn(Converter&);
void convertTopK(Converter&);
void convertInstanceNormalization(Converter&);
void convertBinaryElementwise(Converter&);
void convertVariadic(Converter&);
void convertComparison(Converter&);
void convertLogical(Converter&);
void convertWhere(Converter&);
void convertUnary(Converter&);
void convertGelu(Converter&);
void convertGroupNormalization(Converter&);
void convertMish(Converter&);
void convertCast(Converter&);
void convertCastLike(Converter&);
void convertLrn(Converter&);
void convertQuantizeLinear(Converter&);
void convertDequantizeLinear(Converter&);
void convertDynamicQuantizeLinear(Converter&);
void convertMatMulInteger(Converter&);
void convertQLinearMatMul(Converter&);
void convertQLinearConv(Converter&);
void convertRelu(Converter&);
void convertLeakyRelu(Converter&);
void convertSigmoid(Converter&);
void convertClip(Converter&);
void convertSoftmax(Converter&);
void convertGemm(Converter&);
void convertMatMul(Converter&);
void convertEinsum(Converter&);
void convertReduce(Converter&);
void convertArgReduce(Converter&);
void convertHardmax(Converter&);
void convertFlatten(Converter&);
void convertReshape(Converter&);
void convertSqueeze(Converter&);
void convertUnsqueeze(Converter&);
void convertTranspose(Converter&);
void convertConcat(Converter&);
void convertSplit(Converter&);
void convertSlice(Converter&);
void convertPad(Converter&);
void convertExpand(Converter&);
void convertTile(Converter&);
void convertTrilu(Converter&);
void convertDepthToSpace(Converter&);
void convertSpaceToDepth(Converter&);
void convertGather(Converter&);
void convertGatherElements(Converter&);
void convertGatherND(Converter&);
void convertScatterElements(Converter&);
void convertScatterND(Converter&);
void convertResize(Converter&);
void convertUpsample(Converter&);
void convertRoiAlign(Converter&);
void convertDft(Converter&);
void convertStft(Converter&);
void convertGridSample(Converter&);
void convertIdentity(Converter&);
void convertDropout(Converter&);

bool foldConstant(Converter&);
bool foldShape(Converter&);
bool foldSize(Converter&);
bool foldRange(Converter&);
bool foldConstantOfShape(Converter&);
bool foldEyeLike(Converter&);
bool foldWindow(Converter&);  // HannWindow, HammingWindow, BlackmanWindow
bool foldIdentity(Converter&);

// Patterns of exported networks converted into one IR op (FusePatterns.cpp), tried by the
// handler of the pattern's first node: the erf form of GELU (Div -> Erf -> Add -> Mul -> Mul) into
// unary gelu, and LayerNorm's decomposition (ReduceMean -> Sub -> Pow -> ReduceMean -> Add ->
// Sqrt -> Div [-> Mul -> Add]) into layernorm. True when the pattern matched and was emitted.
bool fuseGelu(Converter&);
bool fuseLayerNorm(Converter&);
// The N-D conv op's params (group, size, stride, dilation, pads) from the node's Conv attributes
// (kernel_shape, strides, dilations, pads, auto_pad, group) for `in` and `weightDims`.
std::vector<ir::Param> convParams(Converter& c, const ir::Dims& in, const ir::Dims& weightDims);
// src1 (op) src2 into `dst`: elew when the shapes agree and LightNet has the op, else elew_bcast.
void binary(Converter&, const std::string& elewOp, const std::string& a, const std::string& b, const std::string& dst);
// The unary op's `func` (one without alpha or beta: abs, sqrt, tanh, ...) of `src` into `dst`.
void unaryFunction(Converter&, const std::string& func, const std::string& src, const std::string& dst);
// A constant int64 tensor of `rank` dims, all 1 but `axis`, which holds 0..length-1: what
// indices along that axis are compared with (OneHot, Hardmax).
std::string axisPositions(Converter&, std::size_t rank, std::size_t axis, int64_t length);
// layernorm of `src` over its dims from `axis`, scale and bias of those dims.
void emitLayerNorm(Converter&, const std::string& src, const std::string& scale, const std::string& bias,
                   std::size_t axis, double epsilon, const std::string& dst);

// Reshape's rules, shared by convertReshape and the shape helpers: the target shape (attribute
// before opset 5, constant input after) and its 0 / -1 entries resolved against the input dims.
std::vector<int64_t> reshapeTarget(Converter&);
ir::Dims resolveReshape(Converter&, const ir::Dims& in, const std::vector<int64_t>& target);

}  // namespace qaic::onnx
