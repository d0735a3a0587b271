// SPDX-License-Identifier: Apache-2.0
// Shared index arithmetic of the data-movement and broadcasting kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::kernels {

// Row-major strides (in elements) of `dims`.
inline std::vector<int64_t> rowMajorStrides(const ir::Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Strides of `in` read as if broadcast (NumPy, right-aligned) to `out`: 0 along broadcast axes.
inline std::vector<int64_t> broadcastStrides(const ir::Dims& in, const ir::Dims& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const auto inStrides = rowMajorStrides(in);
  const std::size_t offset = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) {
    strides[offset + i] = in[i] == 1 && out[offset + i] != 1 ? 0 : inStrides[i];
  }
  return strides;
}

// A tensor seen as [outer, extent, inner] around one axis.
struct AxisView {
  int64_t outer = 1, extent = 1, inner = 1;
};
inline AxisView axisView(const ir::Dims& dims, std::size_t axis) {
  AxisView v;
  for (std::size_t i = 0; i < axis; ++i) v.outer *= dims[i];
  v.extent = dims[axis];
  for (std::size_t i = axis + 1; i < dims.size(); ++i) v.inner *= dims[i];
  return v;
}

// Calls f(outIndex, srcOffset) over every element of `dims` in row-major order, where srcOffset
// follows `srcStrides` (one stride per axis). The innermost axis runs as a plain loop.
template <typename F>
void forEachStrided(const ir::Dims& dims, const std::vector<int64_t>& srcStrides, F&& f) {
  const std::size_t rank = dims.size();
  const int64_t total = ir::elementCount(dims);
  if (total == 0) return;
  if (rank == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::vector<int64_t> index(rank, 0);
  const int64_t innerN = dims[rank - 1];
  const int64_t innerS = srcStrides[rank - 1];
  int64_t base = 0;
  for (int64_t out = 0; out < total; out += innerN) {
    for (int64_t i = 0; i < innerN; ++i) f(out + i, base + i * innerS);
    for (std::size_t axis = rank - 1; axis-- > 0;) {  // advance the odometer above the inner axis
      base += srcStrides[axis];
      if (++index[axis] < dims[axis]) break;
      base -= srcStrides[axis] * dims[axis];
      index[axis] = 0;
    }
  }
}

// Element offsets, one per batch matrix of `dims` (all but the last two axes) broadcast to
// `batch`, in row-major batch order.
inline std::vector<int64_t> batchOffsets(const ir::Dims& dims, const ir::Dims& batch) {
  const ir::Dims own(dims.begin(), dims.end() - 2);
  auto strides = broadcastStrides(own, batch);
  const int64_t matrix = dims[dims.size() - 2] * dims.back();
  for (auto& s : strides) s *= matrix;
  std::vector<int64_t> offsets;
  forEachStrided(batch, strides, [&](int64_t, int64_t offset) { offsets.push_back(offset); });  // one for no batch
  return offsets;
}

// A NumPy matmul's operands as its kernels read them: `a` [.., M, K] and `b` [.., K, N] (a 1-D
// a is a row [1, K], a 1-D b a column [K, 1]), both right-aligned to the rank of `d` [.., M, N],
// whose batch dims are the two broadcast.
struct ProductDims {
  ir::Dims a, b, d, batch;
  int64_t m = 0, k = 0, n = 0;
};

// nullopt when the inner dimensions differ or `dstCount` is not the product's element count.
inline std::optional<ProductDims> productDims(ir::Dims a, ir::Dims b, int64_t dstCount) {
  if (a.empty() || b.empty()) return std::nullopt;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const std::size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  ir::Dims d(rank);
  for (std::size_t i = 0; i + 2 < rank; ++i) d[i] = std::max(a[i], b[i]);
  d[rank - 2] = a[rank - 2];
  d[rank - 1] = b[rank - 1];
  if (a[rank - 1] != b[rank - 2] || ir::elementCount(d) != dstCount) return std::nullopt;
  ProductDims p{a, b, d, ir::Dims(d.begin(), d.end() - 2), d[rank - 2], a[rank - 1], d[rank - 1]};
  return p;
}

}  // namespace qaic::kernels
