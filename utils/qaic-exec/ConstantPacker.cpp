// SPDX-License-Identifier: Apache-2.0
#include "ConstantPacker.hpp"

#include <cstring>
#include <memory>

#include "CompileError.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::compiler {

namespace {

// Elements [first, first + count) of float data as float16, into `out` (count * 2 bytes).
void encodeFloat16(std::span<const std::byte> source, uint64_t first, uint64_t count, std::span<std::byte> out) {
  for (uint64_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, source.data() + (first + i) * sizeof(float), sizeof(float));  // weights may be unaligned
    const uint16_t half = kernels::floatToHalf(value);
    std::memcpy(out.data() + i * sizeof(uint16_t), &half, sizeof(half));
  }
}

}  // namespace

PackedConstants packConstants(const ir::Graph& graph, std::span<const ir::WeightTensor> weights, bool convertToFp16) {
  PackedConstants packed;
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
    // A float op may read float16 data (a cast weight of a half-precision export): widened when
    // a program is built, as -convert-to-fp16 stores float constants.
    const bool widened = info.dtype == ir::DType::Float && weight->dtype == ir::DType::Float16;
    if ((info.dtype != weight->dtype && !widened) ||
        static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(weight->dtype) != weight->data.size()) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': weights tensor '" + dst->name +
                         "' does not hold " + std::string(ir::dtypeName(info.dtype)) + " data of the op's dims");
    }
    if (convertToFp16 && weight->dtype == ir::DType::Float) {
      // Converted while the container is written, a chunk at a time (never whole in memory).
      constant.encoder = container::encoderOver(weight->data, weight->data.size() / sizeof(float), sizeof(uint16_t),
                                                encodeFloat16);
      constant.tensor.dtype = ir::DType::Float16;
    }
    packed.constants.push_back(std::move(constant));
  }
  return packed;
}

}  // namespace qaic::compiler
