#include "onnx/OperatorTable.hpp"

#include <map>
#include <string>

namespace qaic::onnx {

namespace {

using Table = std::map<std::string, OperatorEntry, std::less<>>;

const Table& operatorTable() {
  static const Table table = {
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
  return table;
}

}  // namespace

const OperatorEntry* findOperator(std::string_view opType) {
  const auto it = operatorTable().find(opType);
  return it == operatorTable().end() ? nullptr : &it->second;
}

std::vector<std::string> supportedOperators() {
  std::vector<std::string> names;
  for (const auto& entry : operatorTable()) names.push_back(entry.first);
  return names;  // the map's order: sorted
}

}  // namespace qaic::onnx
