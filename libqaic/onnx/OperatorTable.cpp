#include "onnx/OperatorTable.hpp"

#include <map>

namespace qaic::onnx {
namespace {

using Table = std::map<std::string, OperatorEntry, std::less<>>;

const Table& table() {
  static const Table entries = {
      {"Conv", {convertConv, nullptr, {"conv2d"}, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}}},
      {"MaxPool", {convertMaxPool, nullptr, {"maxpool2d", "reshape"},
                   {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}}},
      {"AveragePool", {convertAveragePool, nullptr, {"avgpool2d", "pad", "reshape"},
                       {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}}},
      {"GlobalAveragePool", {convertGlobalAveragePool, nullptr, {"global_avgpool"}, {}}},
      {"BatchNormalization", {convertBatchNormalization, nullptr, {"batchnorm"},
                              {"epsilon", "momentum", "spatial", "training_mode"}}},
      {"Add", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast"}, {}}},
      {"Sub", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast"}, {}}},
      {"Mul", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast"}, {}}},
      {"Div", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast"}, {}}},
      {"Relu", {convertRelu, nullptr, {"relu"}, {}}},
      {"LeakyRelu", {convertLeakyRelu, nullptr, {"lrelu"}, {"alpha"}}},
      {"Sigmoid", {convertSigmoid, nullptr, {"sigmoid"}, {}}},
      {"Clip", {convertClip, nullptr, {"clip"}, {"max", "min"}}},
      {"Softmax", {convertSoftmax, nullptr, {"softmax", "flatten", "reshape"}, {"axis"}}},
      {"Gemm", {convertGemm, nullptr, {"gemm"}, {"alpha", "beta", "transA", "transB"}}},
      {"MatMul", {convertMatMul, nullptr, {"matmul"}, {}}},
      {"Flatten", {convertFlatten, nullptr, {"flatten"}, {"axis"}}},
      {"Reshape", {convertReshape, nullptr, {"reshape"}, {"allowzero", "shape"}}},
      {"Squeeze", {convertSqueeze, nullptr, {"reshape"}, {"axes"}}},
      {"Unsqueeze", {convertUnsqueeze, nullptr, {"reshape"}, {"axes"}}},
      {"Transpose", {convertTranspose, nullptr, {"transpose"}, {"perm"}}},
      {"Concat", {convertConcat, nullptr, {"concat"}, {"axis"}}},
      {"Pad", {convertPad, nullptr, {"pad"}, {"mode", "pads", "paddings", "value"}}},
      {"Identity", {convertIdentity, foldIdentity, {}, {}}},
      {"Dropout", {convertDropout, nullptr, {}, {"is_test", "ratio", "seed"}}},
      {"Constant", {nullptr, foldConstant, {}, {"value", "value_float", "value_floats", "value_int", "value_ints"}}},
      {"Shape", {nullptr, foldShape, {}, {"end", "start"}, true}},
      {"Size", {nullptr, foldSize, {}, {}, true}},
      {"Range", {nullptr, foldRange, {}, {}}},
      {"ConstantOfShape", {nullptr, foldConstantOfShape, {}, {"value"}}},
      {"Gather", {convertGather, nullptr, {"gather", "reshape"}, {"axis"}}},
      {"Cast", {convertCast, nullptr, {"cast"}, {"to"}}},
  };
  return entries;
}

}  // namespace

const OperatorEntry* findOperator(std::string_view opType) {
  const auto it = table().find(opType);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supportedOperators() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : table()) names.push_back(name);
  return names;
}

}  // namespace qaic::onnx
