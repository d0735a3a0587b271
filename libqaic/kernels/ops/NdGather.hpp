// SPDX-License-Identifier: Apache-2.0
// The N-D gather's index arithmetic (gather_nd, scatter_nd, and matmul_gathered_b, which reads
// the rows a gather_nd would copy where they lie): each index tuple (the last axis of `indices`)
// selects a block of `block` elements of `src`; with batch dims, tuple t of batch b reads within
// batch b. Indices are checked as ops/GatherScatter.cpp describes (negative ones from the end,
// efficient-transformers' INT32_MAX marker selecting nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

// A marked tuple's offset: it selects no element (a gather reads zeros there).
inline constexpr int64_t kNoElement = -1;

struct NdIndexing {
  int64_t batches = 1, tuplesPerBatch = 1, tuple = 1, block = 1, batchElements = 1;
  std::vector<int64_t> extents, strides;  // of the indexed axes
};

// The layout of `indices` over `src` with `batch` batch dims; throws KernelError naming the op
// when the ranks do not fit.
NdIndexing ndIndexing(const BuildContext& ctx, const Tensor& src, const Tensor& indices, std::size_t batch);

// The element offset in `src` of each of the first `tuples` index tuples (kNoElement for a marked
// one), every index checked first: throws KernelError naming the op and the index.
std::vector<int64_t> tupleOffsets(const ir::Op& op, const NdIndexing& nd, const Tensor& indices, int64_t tuples);

}  // namespace qaic::kernels::ops
