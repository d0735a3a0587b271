// SPDX-License-Identifier: Apache-2.0
// NumPy broadcasting for the element-wise kernels (elew, elew_bcast, compare, logical, where,
// expand): the output walked as runs of its innermost (merged) axis, each operand read with a
// fixed step along a run. The per-element work is a function pointer over one run, so each
// (operation, element type) pair is one small loop and no template spans the walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::kernels {

// Output dims with unit axes dropped and adjacent axes merged wherever every operand allows it;
// per operand, its element stride along each of those axes (0 where it is broadcast).
struct BroadcastLayout {
  std::vector<int64_t> dims;                  // at least one axis
  std::vector<std::vector<int64_t>> strides;  // [operand][axis]
  int64_t count = 0;                          // output elements
};

// Each operand's dims must broadcast (right-aligned) to `out`.
BroadcastLayout broadcastLayout(const ir::Dims& out, std::span<const ir::Dims* const> operands);

// One run: `n` consecutive output elements at `out`; operand k starts at operands[k] and moves
// steps[k] elements per output element. `state` is the kernel's own (e.g. parameters).
using RunFunction = void (*)(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n,
                             const void* state);

// Calls `run` over every run of `layout` (on up to `threads` OpenMP threads when the output is
// large). elementSizes / outSize are in bytes.
void forEachRun(const BroadcastLayout& layout, std::span<const std::byte* const> operands,
                std::span<const std::size_t> elementSizes, std::byte* out, std::size_t outSize, RunFunction run,
                const void* state);

}  // namespace qaic::kernels
