// SPDX-License-Identifier: Apache-2.0
// The constants of a program: the data of every `create` op with from_file=true, in op order,
// named by the op's dst tensor. With -convert-to-fp16, float data is stored as float16; with
// -mxfp6-matmul, a 2-D float weight whose every reader is a MatMul's src2 or a Gemm's b (trans_a
// 0) is stored MXFP6-E2M3 (kernels/mx/Mxfp6Format.hpp), others as without it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "container/QpcModel.hpp"
#include "ir/Graph.hpp"
#include "ir/Weights.hpp"

namespace qaic::compiler {

// A converted constant (fp16) carries an encoder over its weights that the container writer
// runs chunk by chunk; its tensor.data stays the (float) source, so its data and every span into
// the weights must outlive the write.
struct PackedConstants {
  std::vector<container::QpcConstant> constants;
};

// Throws CompileError naming the op when its tensor is not among `weights`, or the constant when
// a weight to encode holds a NaN or an infinity.
PackedConstants packConstants(const ir::Graph& graph, std::span<const ir::WeightTensor> weights, bool convertToFp16,
                              bool mxfp6Matmul = false);

}  // namespace qaic::compiler
