#include "onnx/OperatorTable.hpp"

#include <map>
#include <string>

namespace qaic::onnx {

const OperatorEntry* findOperator(std::string_view opType) {
  static const std::map<std::string, OperatorEntry, std::less<>> table = {
      {"Conv", {convertConv, nullptr}},
      {"MaxPool", {convertMaxPool, nullptr}},
      {"AveragePool", {convertAveragePool, nullptr}},
      {"GlobalAveragePool", {convertGlobalAveragePool, nullptr}},
      {"BatchNormalization", {convertBatchNormalization, nullptr}},
      {"Add", {convertBinaryElementwise, foldBinaryElementwise}},
      {"Sub", {convertBinaryElementwise, foldBinaryElementwise}},
      {"Mul", {convertBinaryElementwise, foldBinaryElementwise}},
      {"Div", {convertBinaryElementwise, foldBinaryElementwise}},
      {"Relu", {convertRelu, nullptr}},
      {"LeakyRelu", {convertLeakyRelu, nullptr}},
      {"Sigmoid", {convertSigmoid, nullptr}},
      {"Clip", {convertClip, nullptr}},
      {"Softmax", {convertSoftmax, nullptr}},
      {"Gemm", {convertGemm, nullptr}},
      {"MatMul", {convertMatMul, nullptr}},
      {"Flatten", {convertFlatten, nullptr}},
      {"Reshape", {convertReshape, foldReshape}},
      {"Transpose", {convertTranspose, nullptr}},
      {"Concat", {convertConcat, foldConcat}},
      {"Pad", {convertPad, nullptr}},
      {"Identity", {convertIdentity, foldIdentity}},
      {"Dropout", {convertDropout, nullptr}},
      {"Constant", {nullptr, foldConstant}},
      {"Shape", {nullptr, foldShape, true}},
      {"Gather", {nullptr, foldGather}},
      {"Unsqueeze", {nullptr, foldUnsqueeze}},
      {"Squeeze", {nullptr, foldSqueeze}},
      {"Cast", {nullptr, foldCast}},
  };
  const auto it = table.find(opType);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace qaic::onnx
