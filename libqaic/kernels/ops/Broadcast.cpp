// SPDX-License-Identifier: Apache-2.0
#include "kernels/ops/Broadcast.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels {
namespace {

constexpr std::size_t kMaxOperands = 3;
// Below this many output elements one thread does the whole walk.
constexpr int64_t kParallelElements = int64_t{1} << 16;

}  // namespace

BroadcastLayout broadcastLayout(const ir::Dims& out, std::span<const ir::Dims* const> operands) {
  BroadcastLayout layout;
  layout.count = ir::elementCount(out);
  std::vector<std::vector<int64_t>> full;
  for (const ir::Dims* dims : operands) full.push_back(broadcastStrides(*dims, out));
  layout.strides.resize(operands.size());
  // Innermost first: drop unit axes, merge an axis into the one inside it when every operand
  // steps across the pair as across one axis.
  std::vector<int64_t> dims;
  for (std::size_t a = out.size(); a-- > 0;) {
    if (out[a] == 1) continue;
    bool merge = !dims.empty();
    for (std::size_t k = 0; merge && k < operands.size(); ++k) {
      merge = full[k][a] == layout.strides[k].back() * dims.back();
    }
    if (merge) {
      dims.back() *= out[a];
      continue;
    }
    dims.push_back(out[a]);
    for (std::size_t k = 0; k < operands.size(); ++k) layout.strides[k].push_back(full[k][a]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& s : layout.strides) s.push_back(0);
  }
  std::reverse(dims.begin(), dims.end());
  for (auto& s : layout.strides) std::reverse(s.begin(), s.end());
  layout.dims = std::move(dims);
  return layout;
}

void forEachRun(const BroadcastLayout& layout, std::span<const std::byte* const> operands,
                std::span<const std::size_t> elementSizes, std::byte* out, std::size_t outSize, RunFunction run,
                const void* state) {
  const std::size_t count = operands.size();
  if (layout.count == 0 || count > kMaxOperands) return;
  const std::size_t rank = layout.dims.size();
  const int64_t inner = layout.dims.back();
  const int64_t runs = layout.count / inner;
  int64_t steps[kMaxOperands] = {};
  for (std::size_t k = 0; k < count; ++k) steps[k] = layout.strides[k][rank - 1];
  // The outer index and operand offsets (in elements) of run `r`.
  const auto locate = [&](int64_t r, std::vector<int64_t>& index, int64_t* offset) {
    index.assign(rank, 0);
    for (std::size_t a = rank - 1; a-- > 0;) {
      index[a] = r % layout.dims[a];
      r /= layout.dims[a];
      for (std::size_t k = 0; k < count; ++k) offset[k] += index[a] * layout.strides[k][a];
    }
  };
  // Runs [first, last): an odometer over the outer axes, started at `first`.
  const auto walk = [&](int64_t first, int64_t last) {
    std::vector<int64_t> index;
    int64_t offset[kMaxOperands] = {};
    locate(first, index, offset);
    const std::byte* from[kMaxOperands] = {};
    for (int64_t r = first; r < last; ++r) {
      for (std::size_t k = 0; k < count; ++k) from[k] = operands[k] + offset[k] * static_cast<int64_t>(elementSizes[k]);
      run(from, steps, out + r * inner * static_cast<int64_t>(outSize), inner, state);
      for (std::size_t a = rank - 1; a-- > 0;) {
        for (std::size_t k = 0; k < count; ++k) offset[k] += layout.strides[k][a];
        if (++index[a] < layout.dims[a]) break;
        for (std::size_t k = 0; k < count; ++k) offset[k] -= layout.strides[k][a] * layout.dims[a];
        index[a] = 0;
      }
    }
  };
  const int threads = omp_get_max_threads();
  if (layout.count < kParallelElements || threads <= 1) {
    walk(0, runs);
    return;
  }
  if (runs < threads) {
    // Few long runs: each is cut into one piece per thread.
    const int64_t pieces = int64_t{threads} * runs;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t r = p / threads, t = p % threads;
      const int64_t begin = inner * t / threads, end = inner * (t + 1) / threads;
      std::vector<int64_t> index;
      int64_t offset[kMaxOperands] = {};
      locate(r, index, offset);
      const std::byte* from[kMaxOperands] = {};
      for (std::size_t k = 0; k < count; ++k) {
        from[k] = operands[k] + (offset[k] + begin * steps[k]) * static_cast<int64_t>(elementSizes[k]);
      }
      run(from, steps, out + (r * inner + begin) * static_cast<int64_t>(outSize), end - begin, state);
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) walk(runs * t / threads, runs * (t + 1) / threads);
}

}  // namespace qaic::kernels
