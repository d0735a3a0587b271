// Which ONNX operators the importer understands, and how: `convert` emits IR ops, `fold`
// computes the outputs at import time when every input is constant (returning false when it
// cannot, e.g. a broadcast it does not fold, so `convert` runs instead).
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
  bool foldWithoutConstantInputs = false;  // Shape: needs only its input's dims
};

const OperatorEntry* findOperator(std::string_view opType);
// Every operator type the table above knows, sorted (qaic-exec -operators-supported).
std::vector<std::string> supportedOperators();

// Handlers, one per ONNX operator family.
void convertConv(Converter&);
void convertMaxPool(Converter&);
void convertAveragePool(Converter&);
void convertGlobalAveragePool(Converter&);
void convertBatchNormalization(Converter&);
void convertBinaryElementwise(Converter&);
void convertRelu(Converter&);
void convertLeakyRelu(Converter&);
void convertSigmoid(Converter&);
void convertClip(Converter&);
void convertSoftmax(Converter&);
void convertGemm(Converter&);
void convertMatMul(Converter&);
void convertFlatten(Converter&);
void convertReshape(Converter&);
void convertTranspose(Converter&);
void convertConcat(Converter&);
void convertPad(Converter&);
void convertIdentity(Converter&);
void convertDropout(Converter&);

bool foldConstant(Converter&);
bool foldShape(Converter&);
bool foldGather(Converter&);
bool foldUnsqueeze(Converter&);
bool foldSqueeze(Converter&);
bool foldCast(Converter&);
bool foldConcat(Converter&);
bool foldReshape(Converter&);
bool foldBinaryElementwise(Converter&);
bool foldIdentity(Converter&);

// Reshape's rules, shared by convertReshape and foldReshape: the target shape (attribute before
// opset 5, constant input after) and its 0 / -1 entries resolved against the input dims.
std::vector<int64_t> reshapeTarget(Converter&);
ir::Dims resolveReshape(Converter&, const ir::Dims& in, const std::vector<int64_t>& target);

}  // namespace qaic::onnx
