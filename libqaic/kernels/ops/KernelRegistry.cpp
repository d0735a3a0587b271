// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <array>
#include <utility>

#include "kernels/ops/Factories.hpp"

namespace qaic::kernels {

namespace {
using Entry = std::pair<std::string_view, KernelFactory>;
constexpr std::array kFactories = {
    Entry{"create", ops::makeCreate},
    Entry{"zeros", ops::makeZeros},
    Entry{"arange", ops::makeArange},
    Entry{"slice", ops::makeSlice},
    Entry{"print", ops::makePrint},
    Entry{"fprint", ops::makePrint},
    Entry{"reshape", ops::makeReshape},
    Entry{"flatten", ops::makeReshape},
    Entry{"transpose", ops::makeTranspose},
    Entry{"concat", ops::makeConcat},
    Entry{"pad", ops::makePad},
    Entry{"elew", ops::makeElew},
    Entry{"elew_bcast", ops::makeElew},
    Entry{"relu", ops::makeRelu},
    Entry{"lrelu", ops::makeLrelu},
    Entry{"sigmoid", ops::makeSigmoid},
    Entry{"clip", ops::makeClip},
    Entry{"batchnorm", ops::makeBatchnorm},
    Entry{"softmax", ops::makeSoftmax},
    Entry{"maxreduce", ops::makeMaxreduce},
    Entry{"maxreduce_arg", ops::makeMaxreduce},
    Entry{"dot_product", ops::makeDotProduct},
    Entry{"global_avgpool", ops::makeGlobalAvgpool},
    Entry{"conv2d", ops::makeConv2d},
    Entry{"deconv2d", ops::makeDeconv2d},
    Entry{"maxpool2d", ops::makePool2d},
    Entry{"avgpool2d", ops::makePool2d},
    Entry{"upsample", ops::makeResize},
    Entry{"resize", ops::makeResize},
    Entry{"submean", ops::makeSubmean},
    Entry{"rearange", ops::makeRearange},
    Entry{"pick1d", ops::makePick1d},
    Entry{"sort1d", ops::makeSort1d},
    Entry{"matmul", ops::makeMatmul},
    Entry{"matmul_trans_b", ops::makeMatmulTransB},
    Entry{"matmul_gathered_b", ops::makeMatmulGatheredB},
    Entry{"gemm", ops::makeGemm},
    Entry{"cast", ops::makeCast},
    Entry{"gather", ops::makeGather},
    Entry{"gather_elements", ops::makeGatherElements},
    Entry{"gather_nd", ops::makeGatherNd},
    Entry{"scatter_elements", ops::makeScatterElements},
    Entry{"scatter_nd", ops::makeScatterNd},
    Entry{"unary", ops::makeUnary},
    Entry{"compare", ops::makeCompare},
    Entry{"logical", ops::makeLogical},
    Entry{"where", ops::makeWhere},
    Entry{"reduce", ops::makeReduce},
    Entry{"arg_reduce", ops::makeArgReduce},
    Entry{"cumsum", ops::makeCumsum},
    Entry{"topk", ops::makeTopk},
    Entry{"layernorm", ops::makeLayernorm},
    Entry{"log_softmax", ops::makeLogSoftmax},
    Entry{"strided_slice", ops::makeStridedSlice},
    Entry{"expand", ops::makeExpand},
    Entry{"tile", ops::makeTile},
    Entry{"trilu", ops::makeTrilu},
    Entry{"pool", ops::makePool},
    Entry{"conv", ops::makeConv},
    Entry{"deconv", ops::makeDeconv},
    Entry{"interpolate", ops::makeInterpolate},
    Entry{"grid_sample", ops::makeGridSample},
    Entry{"roi_align", ops::makeRoiAlign},
    Entry{"pool_argmax", ops::makePoolArgmax},
    Entry{"all_reduce_sum", ops::makeAllReduceSum},
    Entry{"all_gather", ops::makeAllGather},
    Entry{"peer_send", ops::makePeerSend},
    Entry{"peer_receive", ops::makePeerReceive},
};
}  // namespace

std::vector<std::string_view> kernelOptypes() {
  std::vector<std::string_view> names;
  for (const auto& [name, factory] : kFactories) names.push_back(name);
  return names;
}

KernelFactory findKernelFactory(std::string_view optype) {
  for (const auto& [name, factory] : kFactories) {
    if (name == optype) return factory;
  }
  return nullptr;
}

void throwKernelError(const ir::Op& op, const std::string& detail) {
  throw ExecutionError("op '" + op.name + "' (" + op.optype + "): " + detail);
}

void requireDTypes(const ir::Op& op, std::string_view argName, ir::DType type,
                   std::initializer_list<ir::DType> allowed) {
  if (std::find(allowed.begin(), allowed.end(), type) != allowed.end()) return;
  throwKernelError(op, "tensor '" + std::string(argName) + "': dtype " + std::string(ir::dtypeName(type)) +
                           " is not supported by this operator");
}

Tensor& BuildContext::input(std::string_view argName) const {
  const ir::TensorArg* arg = op.findInput(argName);
  if (!arg) throwKernelError(op, "missing input '" + std::string(argName) + "'");
  auto it = tensors.find(arg->name);
  if (it == tensors.end()) throwKernelError(op, "input tensor '" + arg->name + "' is not defined");
  return it->second;
}

Tensor& BuildContext::output(std::string_view argName) const {
  const ir::TensorArg* arg = op.findOutput(argName);
  if (!arg) throwKernelError(op, "missing output '" + std::string(argName) + "'");
  auto it = tensors.find(arg->name);
  if (it == tensors.end()) throwKernelError(op, "output tensor '" + arg->name + "' has no inferred shape");
  return it->second;
}

}  // namespace qaic::kernels
