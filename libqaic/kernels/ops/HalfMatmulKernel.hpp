// SPDX-License-Identifier: Apache-2.0
// The kernel of a matmul whose right operand is float16 (ops/HalfMatmul.hpp), for matmul and
// matmul_trans_b (ops/Linear.cpp) and for matmul_gathered_b, which takes B's rows from a cache
// where they lie.
#pragma once

#include <memory>
#include <vector>

#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

// d[batch] = a[batch] . b[batch] (b [k, n], or [n, k] when bTransposed); aOffsets / bOffsets:
// each batch's first element (ops/Indexing.hpp batchOffsets).
std::unique_ptr<Kernel> makeHalfMatmulKernel(const BuildContext& ctx, const Tensor& a, const Tensor& b, Tensor& d,
                                             std::vector<int64_t> aOffsets, std::vector<int64_t> bOffsets, int64_t m,
                                             int64_t k, int64_t n, bool bTransposed);

}  // namespace qaic::kernels::ops
