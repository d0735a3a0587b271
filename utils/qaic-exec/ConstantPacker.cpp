// SPDX-License-Identifier: Apache-2.0
#include "ConstantPacker.hpp"

#include <cstring>
#include <optional>

#include "CompileError.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxfp6Format.hpp"

namespace qaic::compiler {

namespace {

std::vector<std::byte> toFloat16(std::span<const std::byte> data) {
  const std::size_t count = data.size() / sizeof(float);
  std::vector<std::byte> out(count * sizeof(uint16_t));
  for (std::size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, data.data() + i * sizeof(float), sizeof(float));  // weights may be unaligned
    const uint16_t half = kernels::floatToHalf(value);
    std::memcpy(out.data() + i * sizeof(uint16_t), &half, sizeof(half));
  }
  return out;
}

// The axis K of a weight the MX kernels can multiply with: every reader a matmul's src2 (K is
// dims[0]) or a gemm's b without trans_a (dims[1] with trans_b), all agreeing. nullopt keeps it
// plain: other readers, a graph io, another rank or dtype.
std::optional<uint8_t> mxfp6ReductionAxis(const ir::Graph& graph, const std::string& tensor,
                                          const ir::TensorInfo& info) {
  if (info.dims.size() != 2 || (info.dtype != ir::DType::Float && info.dtype != ir::DType::Float16)) return {};
  for (const ir::IoBuffer& io : graph.io) {
    if (io.tensor == tensor) return {};
  }
  std::optional<uint8_t> axis;
  for (const ir::Op& op : graph.ops) {
    for (const auto& arg : op.inputs) {
      if (arg.name != tensor) continue;
      uint8_t mine;
      if (op.optype == "matmul" && arg.argName == "src2") {
        mine = 0;
      } else if (op.optype == "gemm" && arg.argName == "b" && !op.boolean("trans_a")) {
        mine = op.boolean("trans_b") ? 1 : 0;
      } else {
        return {};
      }
      if (axis && *axis != mine) return {};
      axis = mine;
    }
  }
  return axis;
}

std::vector<std::byte> toMxfp6(const ir::WeightTensor& weight, const ir::Dims& dims, uint8_t axis) {
  const int64_t k = dims[axis], n = dims[1 - axis];
  std::vector<std::byte> out(kernels::mx::encodedBytes(k, n));
  const kernels::mx::WeightSource source{weight.data, weight.dtype, k, n, axis == 1};
  kernels::mx::encodeMxfp6Columns(kernels::mx::ElementFormat::E2M3, source, 0, n, out);
  return out;
}

}  // namespace

PackedConstants packConstants(const ir::Graph& graph, std::span<const ir::WeightTensor> weights, bool convertToFp16,
                              bool mxfp6Matmul) {
  PackedConstants packed;
  packed.storage.reserve(graph.ops.size());  // spans into storage must not move
  for (const ir::Op& op : graph.ops) {
    if (op.optype != "create" || !op.boolean("from_file")) continue;
    const ir::TensorArg* dst = op.findOutput("dst");
    const ir::WeightTensor* weight = nullptr;
    for (const auto& candidate : weights) {
      if (dst != nullptr && candidate.name == dst->name) weight = &candidate;
    }
    if (weight == nullptr) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': no weights for tensor '" +
                         (dst ? dst->name : std::string("?")) + "'");
    }
    container::QpcConstant constant;
    constant.index = static_cast<uint32_t>(packed.constants.size());
    constant.tensor = *weight;
    // The create op's dims are the tensor's shape (the weights entry may be shaped differently).
    const ir::TensorInfo& info = graph.tensors.at(dst->name);
    constant.tensor.dims = info.dims;
    if (info.dtype != weight->dtype ||
        static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype) != weight->data.size()) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': weights tensor '" + dst->name +
                         "' does not hold " + std::string(ir::dtypeName(info.dtype)) + " data of the op's dims");
    }
    const auto axis = mxfp6Matmul ? mxfp6ReductionAxis(graph, dst->name, info) : std::nullopt;
    if (axis && !weight->data.empty()) {
      try {
        packed.storage.push_back(toMxfp6(*weight, info.dims, *axis));
      } catch (const kernels::mx::MxFormatError& e) {
        throw CompileError(graph.sourceName + ": constant '" + dst->name + "': cannot be stored as MXFP6: " + e.what());
      }
      constant.tensor.data = packed.storage.back();
      constant.tensor.encoding = ir::WeightEncoding::Mxfp6E2M3;
      constant.tensor.reductionAxis = *axis;
    } else if (convertToFp16 && weight->dtype == ir::DType::Float) {
      packed.storage.push_back(toFloat16(weight->data));
      constant.tensor.dtype = ir::DType::Float16;
      constant.tensor.data = packed.storage.back();
    }
    packed.constants.push_back(std::move(constant));
  }
  return packed;
}

}  // namespace qaic::compiler
