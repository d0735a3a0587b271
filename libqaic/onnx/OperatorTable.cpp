#include "onnx/OperatorTable.hpp"

#include <map>

namespace qaic::onnx {
namespace {

using Table = std::map<std::string, OperatorEntry, std::less<>>;

const Table& table() {
  // Attribute lists shared by families of operators.
  const std::vector<std::string_view> pool = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                                              "pads",     "storage_order", "strides"};
  const std::vector<std::string_view> reduce = {"axes", "keepdims"};
  const std::vector<std::string_view> binary = {"axis", "broadcast"};  // legacy (opset < 7) broadcasting
  const std::vector<std::string_view> elementwise = {"elew", "elew_bcast"};
  const std::vector<std::string_view> recurrentOps = {"gemm",   "strided_slice", "reshape",    "transpose",
                                                      "concat", "elew",          "elew_bcast", "sigmoid",
                                                      "relu",   "unary",         "clip"};
  const OperatorEntry math{convertUnary, nullptr, {"unary"}, {}};
  static const Table entries = {
      // Convolution, pooling, normalization.
      {"Conv",
       {convertConv,
        nullptr,
        {"conv2d", "conv", "reshape"},
        {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}}},
      {"ConvTranspose",
       {convertConvTranspose,
        nullptr,
        {"deconv2d", "deconv", "reshape"},
        {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}}},
      {"MaxPool", {convertMaxPool, nullptr, {"maxpool2d", "pool", "pool_argmax", "pad", "reshape"}, pool}},
      {"MaxUnpool", {convertMaxUnpool, nullptr, {"reshape", "scatter_elements"}, {"kernel_shape", "pads", "strides"}}},
      {"AveragePool",
       {convertAveragePool,
        nullptr,
        {"avgpool2d", "pool", "pad", "reshape"},
        {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"}}},
      {"GlobalAveragePool", {convertGlobalAveragePool, nullptr, {"global_avgpool"}, {}}},
      {"GlobalMaxPool", {convertGlobalMaxPool, nullptr, {"reduce"}, {}}},
      {"BatchNormalization",
       {convertBatchNormalization, nullptr, {"batchnorm"}, {"epsilon", "momentum", "spatial", "training_mode"}}},
      {"MeanVarianceNormalization",
       {convertMeanVarianceNormalization, nullptr, {"reduce", "elew", "elew_bcast", "unary"}, {"axes"}}},
      {"LayerNormalization",
       {convertLayerNormalization,
        nullptr,
        {"layernorm", "expand", "reduce", "elew", "elew_bcast", "unary"},
        {"axis", "epsilon", "stash_type"}}},
      {"LRN",
       {convertLrn, nullptr, {"elew", "elew_bcast", "reshape", "pad", "pool"}, {"alpha", "beta", "bias", "size"}}},
      {"InstanceNormalization",
       {convertInstanceNormalization, nullptr, {"layernorm", "reshape", "elew", "elew_bcast"}, {"epsilon"}}},
      {"GroupNormalization",
       {convertGroupNormalization,
        nullptr,
        {"layernorm", "reshape", "elew", "elew_bcast"},
        {"epsilon", "num_groups", "stash_type"}}},
      // Element-wise arithmetic, comparison, logic.
      {"Add", {convertBinaryElementwise, nullptr, elementwise, binary}},
      {"Sub", {convertBinaryElementwise, nullptr, elementwise, binary}},
      {"Mul", {convertBinaryElementwise, nullptr, elementwise, binary}},
      {"Div", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast", "unary"}, binary}},
      {"Pow", {convertBinaryElementwise, nullptr, {"elew", "elew_bcast", "cast"}, {}}},
      {"Mod", {convertBinaryElementwise, nullptr, {"elew_bcast"}, {"fmod"}}},
      {"PRelu", {convertBinaryElementwise, nullptr, {"elew_bcast"}, {}}},
      {"Max", {convertVariadic, nullptr, elementwise, {}}},
      {"Min", {convertVariadic, nullptr, elementwise, {}}},
      {"Sum", {convertVariadic, nullptr, elementwise, {}}},
      {"Mean", {convertVariadic, nullptr, elementwise, {}}},
      {"Equal", {convertComparison, nullptr, {"compare"}, {}}},
      {"Less", {convertComparison, nullptr, {"compare"}, {}}},
      {"LessOrEqual", {convertComparison, nullptr, {"compare"}, {}}},
      {"Greater", {convertComparison, nullptr, {"compare"}, {}}},
      {"GreaterOrEqual", {convertComparison, nullptr, {"compare"}, {}}},
      {"And", {convertLogical, nullptr, {"logical"}, {}}},
      {"Or", {convertLogical, nullptr, {"logical"}, {}}},
      {"Xor", {convertLogical, nullptr, {"logical"}, {}}},
      {"Where", {convertWhere, nullptr, {"where"}, {}}},
      {"Cast", {convertCast, nullptr, {"cast"}, {"to"}}},
      {"CastLike", {convertCastLike, nullptr, {"cast"}, {"saturate"}}},
      // Quantization (the QDQ form), computed in float.
      {"QuantizeLinear",
       {convertQuantizeLinear,
        nullptr,
        {"cast", "elew", "elew_bcast", "unary", "clip", "reshape"},
        {"axis", "block_size", "output_dtype", "saturate"}}},
      {"DequantizeLinear",
       {convertDequantizeLinear, nullptr, {"cast", "elew", "elew_bcast", "reshape"}, {"axis", "block_size"}}},
      {"DynamicQuantizeLinear",
       {convertDynamicQuantizeLinear,
        nullptr,
        {"reduce", "elew", "elew_bcast", "unary", "clip", "cast", "reshape"},
        {}}},
      {"MatMulInteger", {convertMatMulInteger, nullptr, {"cast", "reshape", "elew", "elew_bcast", "matmul"}, {}}},
      {"QLinearMatMul",
       {convertQLinearMatMul, nullptr, {"cast", "reshape", "elew", "elew_bcast", "matmul", "unary", "clip"}, {}}},
      // Math functions and activations.
      {"Abs", math},
      {"Neg", math},
      {"Sign", math},
      {"Floor", math},
      {"Ceil", math},
      {"Round", math},
      {"Reciprocal", math},
      {"Sqrt", math},
      {"Exp", math},
      {"Log", math},
      {"Sin", math},
      {"Cos", math},
      {"Tan", math},
      {"Asin", math},
      {"Acos", math},
      {"Atan", math},
      {"Sinh", math},
      {"Cosh", math},
      {"Asinh", math},
      {"Acosh", math},
      {"Atanh", math},
      {"Tanh", math},
      {"Erf", math},
      {"Softplus", math},
      {"Softsign", math},
      {"HardSwish", math},
      {"Not", math},
      {"HardSigmoid", {convertUnary, nullptr, {"unary"}, {"alpha", "beta"}}},
      {"Elu", {convertUnary, nullptr, {"unary"}, {"alpha"}}},
      {"Selu", {convertUnary, nullptr, {"unary"}, {"alpha", "gamma"}}},
      {"Celu", {convertUnary, nullptr, {"unary"}, {"alpha"}}},
      {"ThresholdedRelu", {convertUnary, nullptr, {"unary"}, {"alpha"}}},
      {"Relu", {convertRelu, nullptr, {"relu"}, {}}},
      {"Shrink", {convertShrink, nullptr, {"compare", "elew", "elew_bcast", "where"}, {"bias", "lambd"}}},
      {"Gelu", {convertGelu, nullptr, {"unary"}, {"approximate"}}},
      {"Mish", {convertMish, nullptr, {"unary", "elew"}, {}}},
      {"LeakyRelu", {convertLeakyRelu, nullptr, {"lrelu"}, {"alpha"}}},
      {"Sigmoid", {convertSigmoid, nullptr, {"sigmoid"}, {}}},
      {"Clip", {convertClip, nullptr, {"clip"}, {"max", "min"}}},
      {"Softmax", {convertSoftmax, nullptr, {"softmax", "flatten", "reshape"}, {"axis"}}},
      {"LogSoftmax", {convertSoftmax, nullptr, {"log_softmax", "flatten", "reshape"}, {"axis"}}},
      // Reductions.
      {"ReduceSum", {convertReduce, nullptr, {"reduce"}, {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceMean", {convertReduce, nullptr, {"reduce", "layernorm"}, reduce}},
      {"ReduceMax", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceMin", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceProd", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceSumSquare", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceL1", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceL2", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceLogSum", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ReduceLogSumExp", {convertReduce, nullptr, {"reduce"}, reduce}},
      {"ArgMax", {convertArgReduce, nullptr, {"arg_reduce"}, {"axis", "keepdims", "select_last_index"}}},
      {"Hardmax", {convertHardmax, nullptr, {"arg_reduce", "compare", "where", "reshape"}, {"axis"}}},
      {"ArgMin", {convertArgReduce, nullptr, {"arg_reduce"}, {"axis", "keepdims", "select_last_index"}}},
      {"CumSum", {convertCumSum, nullptr, {"cumsum"}, {"exclusive", "reverse"}}},
      {"IsNaN", {convertIsNaN, nullptr, {"compare", "unary"}, {}}},
      {"IsInf", {convertIsInf, nullptr, {"compare", "unary"}, {"detect_negative", "detect_positive"}}},
      {"OneHot",
       {convertOneHot, nullptr, {"cast", "reshape", "compare", "elew_bcast", "where", "strided_slice"}, {"axis"}}},
      // Recurrent layers, unrolled over the sequence.
      {"LSTM",
       {convertLstm,
        nullptr,
        recurrentOps,
        {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "input_forget",
         "layout"}}},
      {"GRU",
       {convertGru,
        nullptr,
        recurrentOps,
        {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
         "linear_before_reset", "layout"}}},
      {"RNN",
       {convertRnn,
        nullptr,
        recurrentOps,
        {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout"}}},
      {"TopK", {convertTopK, nullptr, {"topk"}, {"axis", "largest", "sorted"}}},
      // Linear algebra.
      {"Gemm", {convertGemm, nullptr, {"gemm"}, {"alpha", "beta", "transA", "transB"}}},
      {"MatMul", {convertMatMul, nullptr, {"matmul"}, {}}},
      {"Einsum", {convertEinsum, nullptr, {"matmul", "reduce", "reshape", "transpose", "where"}, {"equation"}}},
      // Shapes and data movement.
      {"Flatten", {convertFlatten, nullptr, {"flatten"}, {"axis"}}},
      {"Reshape", {convertReshape, nullptr, {"reshape"}, {"allowzero", "shape"}}},
      {"Squeeze", {convertSqueeze, nullptr, {"reshape"}, {"axes"}}},
      {"Unsqueeze", {convertUnsqueeze, nullptr, {"reshape"}, {"axes"}}},
      {"Transpose", {convertTranspose, nullptr, {"transpose"}, {"perm"}}},
      {"Concat", {convertConcat, nullptr, {"concat"}, {"axis"}}},
      {"Split", {convertSplit, nullptr, {"strided_slice"}, {"axis", "num_outputs", "split"}}},
      {"Slice", {convertSlice, nullptr, {"strided_slice"}, {"axes", "ends", "starts"}}},
      {"Pad", {convertPad, nullptr, {"pad", "strided_slice", "concat"}, {"mode", "pads", "paddings", "value"}}},
      {"Expand", {convertExpand, nullptr, {"expand"}, {}}},
      {"Tile", {convertTile, nullptr, {"tile"}, {}}},
      {"Trilu", {convertTrilu, nullptr, {"trilu"}, {"upper"}}},
      {"DepthToSpace", {convertDepthToSpace, nullptr, {"reshape", "transpose"}, {"blocksize", "mode"}}},
      {"SpaceToDepth", {convertSpaceToDepth, nullptr, {"reshape", "transpose"}, {"blocksize"}}},
      {"Resize",
       {convertResize,
        nullptr,
        {"interpolate"},
        {"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
         "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"}}},
      // Signal processing (opset 17).
      {"DFT", {convertDft, nullptr, {"transpose", "reshape", "matmul"}, {"axis", "inverse", "onesided"}}},
      {"STFT", {convertStft, nullptr, {"transpose", "reshape", "conv2d"}, {"onesided"}}},
      {"HannWindow", {nullptr, foldWindow, {}, {"output_datatype", "periodic"}}},
      {"HammingWindow", {nullptr, foldWindow, {}, {"output_datatype", "periodic"}}},
      {"BlackmanWindow", {nullptr, foldWindow, {}, {"output_datatype", "periodic"}}},
      {"Upsample", {convertUpsample, nullptr, {"interpolate"}, {"mode", "scales"}}},
      {"GridSample", {convertGridSample, nullptr, {"grid_sample"}, {"align_corners", "mode", "padding_mode"}}},
      {"Identity", {convertIdentity, foldIdentity, {}, {}}},
      // Converter::convertNodeOrBranch takes an If whose condition is known at import time as
      // the branch it selects.
      {"If", {nullptr, nullptr, {}, {"else_branch", "then_branch"}, false, true}},
      {"Dropout", {convertDropout, nullptr, {}, {"is_test", "ratio", "seed"}}},
      // Indexing.
      {"Gather", {convertGather, nullptr, {"gather", "reshape"}, {"axis"}}},
      {"GatherElements", {convertGatherElements, nullptr, {"gather_elements"}, {"axis"}}},
      {"GatherND", {convertGatherND, nullptr, {"gather_nd"}, {"batch_dims"}}},
      {"ScatterElements", {convertScatterElements, nullptr, {"scatter_elements"}, {"axis", "reduction"}}},
      {"Scatter", {convertScatterElements, nullptr, {"scatter_elements"}, {"axis"}}},
      {"ScatterND", {convertScatterND, nullptr, {"scatter_nd"}, {"reduction"}}},
      // Import-time constants.
      {"Constant", {nullptr, foldConstant, {}, {"value", "value_float", "value_floats", "value_int", "value_ints"}}},
      {"Shape", {nullptr, foldShape, {}, {"end", "start"}, true}},
      {"Size", {nullptr, foldSize, {}, {}, true}},
      {"Range", {nullptr, foldRange, {}, {}}},
      {"ConstantOfShape", {nullptr, foldConstantOfShape, {}, {"value"}}},
      {"EyeLike", {nullptr, foldEyeLike, {}, {"dtype", "k"}, true}},
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
