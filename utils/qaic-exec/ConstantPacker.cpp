// SPDX-License-Identifier: Apache-2.0
#include "ConstantPacker.hpp"

#include <cstring>
#include <memory>
#include <optional>

#include "CompileError.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxfp6Format.hpp"

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

// Columns of the weight encoded as the container is written, a range at a time (never whole
// in memory); a NaN or infinite weight throws, and the writer names the constant.
std::shared_ptr<const container::ConstantEncoder> mxfp6Encoder(const ir::WeightTensor& weight, const ir::Dims& dims,
                                                               uint8_t axis) {
  const int64_t k = dims[axis], n = dims[1 - axis];
  auto encoder = std::make_shared<container::ConstantEncoder>();
  encoder->unitBytes = kernels::mx::columnBytes(k);
  encoder->storedBytes = kernels::mx::encodedBytes(k, n);
  const kernels::mx::WeightSource source{weight.data, weight.dtype, k, n, axis == 1};
  encoder->encode = [source](uint64_t first, uint64_t count, std::span<std::byte> out) {
    kernels::mx::encodeMxfp6Columns(kernels::mx::ElementFormat::E2M3, source, static_cast<int64_t>(first),
                                    static_cast<int64_t>(count), out);
  };
  return encoder;
}

}  // namespace

PackedConstants packConstants(const ir::Graph& graph, std::span<const ir::WeightTensor> weights, bool convertToFp16,
                              bool mxfp6Matmul) {
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
    // A float16 op over float data: a constant cast-placement kept narrow (stored float16 anyway).
    const bool narrowed = convertToFp16 && info.dtype == ir::DType::Float16 && weight->dtype == ir::DType::Float;
    if ((info.dtype != weight->dtype && !widened && !narrowed) ||
        static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(weight->dtype) != weight->data.size()) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': weights tensor '" + dst->name +
                         "' does not hold " + std::string(ir::dtypeName(info.dtype)) + " data of the op's dims");
    }
    const auto axis = mxfp6Matmul ? mxfp6ReductionAxis(graph, dst->name, info) : std::nullopt;
    if (axis && !weight->data.empty()) {
      constant.encoder = mxfp6Encoder(*weight, info.dims, *axis);
      constant.tensor.dtype = info.dtype;  // what the network computes in; the encoder reads the stored type
      constant.tensor.encoding = ir::WeightEncoding::Mxfp6E2M3;
      constant.tensor.reductionAxis = *axis;
    } else if (convertToFp16 && weight->dtype == ir::DType::Float) {
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
