// SPDX-License-Identifier: Apache-2.0
// Shape rules of matmul (NumPy semantics), matmul_trans_b and gemm (ONNX Gemm semantics).
#include <algorithm>
#include <string>
#include <utility>

#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {

namespace {

// NumPy matmul of src1 [.., M, K] and src2 as [.., K, N] (`transposedB`: src2 holds [.., N, K]).
// src2 may be TL_FLOAT16 with a TL_FLOAT src1 (a float16 KV cache read where it lies); the
// result has src1's dtype.
Outs matmulShape(const Op& op, Infos in, bool transposedB) {
  if (!(in[0].dtype == DType::Float && in[1].dtype == DType::Float16))
    requireSameDType(op, "src2", in[1], in[0], "src1");
  requireMinRank(op, "src1", in[0], 1);
  requireMinRank(op, "src2", in[1], transposedB ? 2 : 1);
  // 1-D operands are promoted ([K] -> [1,K] on the left, [K,1] on the right) and the
  // promoted axis is dropped from the result.
  Dims a = in[0].dims;
  Dims b = in[1].dims;
  if (transposedB) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const bool vectorA = a.size() == 1;
  const bool vectorB = b.size() == 1;
  if (vectorA) a.insert(a.begin(), 1);
  if (vectorB) b.push_back(1);
  const int64_t m = a[a.size() - 2];
  const int64_t k = a[a.size() - 1];
  const int64_t kb = b[b.size() - 2];
  const int64_t n = b[b.size() - 1];
  if (k != kb) {
    throwInputError(op, "src2",
                    std::string(transposedB ? "last" : "inner") + " dimension " + std::to_string(kb) + " of " +
                        formatDims(in[1].dims) + " != " + std::to_string(k) + " of src1 " + formatDims(in[0].dims));
  }
  Dims out = broadcastShapes(op, "src2", Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
  if (!vectorA) out.push_back(m);
  if (!vectorB) out.push_back(n);
  return {TensorInfo{in[0].dtype, out}};
}

}  // namespace

Outs shapeMatmul(const Op& op, Infos in) { return matmulShape(op, in, false); }

Outs shapeMatmulTransB(const Op& op, Infos in) { return matmulShape(op, in, true); }

// matmul (or, with trans_b, matmul_trans_b) of src1 and the rows of src2 [.., P, X] that
// gather_nd(src2, indices, batch_dims = rank - 2) selects: indices [.., N, 1] of src2's rank and
// batch dims, the gathered operand [.., N, X].
Outs shapeMatmulGatheredB(const Op& op, Infos in) {
  requireMinRank(op, "src2", in[1], 2);
  requireIndices(op, "indices", in[2]);
  const Dims& source = in[1].dims;
  const Dims& indices = in[2].dims;
  const std::size_t rank = source.size();
  if (indices.size() != rank || indices.back() != 1 || !std::equal(source.begin(), source.end() - 2, indices.begin()))
    throwInputError(
        op, "indices",
        "dims " + formatDims(indices) + " are not [.., N, 1] with the batch dims of src2 " + formatDims(source));
  Dims gathered(source.begin(), source.end() - 2);
  gathered.push_back(indices[rank - 2]);
  gathered.push_back(source.back());
  const TensorInfo operands[] = {in[0], TensorInfo{in[1].dtype, gathered}};
  return matmulShape(op, operands, op.boolean("trans_b"));
}

Outs shapeGemm(const Op& op, Infos in) {
  requireRank(op, "a", in[0], 2);
  requireRank(op, "b", in[1], 2);
  requireSameDType(op, "b", in[1], in[0], "a");
  requireSameDType(op, "c", in[2], in[0], "a");
  const Dims& a = in[0].dims;
  const Dims& b = in[1].dims;
  const bool transA = op.boolean("trans_a");
  const bool transB = op.boolean("trans_b");
  const int64_t m = transA ? a[1] : a[0];
  const int64_t k = transA ? a[0] : a[1];
  const int64_t kb = transB ? b[1] : b[0];
  const int64_t n = transB ? b[0] : b[1];
  if (k != kb) {
    throwInputError(
        op, "b",
        "inner dimension " + std::to_string(kb) + " != " + std::to_string(k) + " of a (after trans_a/trans_b)");
  }
  const Dims result{m, n};
  const Dims& c = in[2].dims;
  bool broadcastable = c.size() <= 2;
  for (std::size_t i = 0; broadcastable && i < c.size(); ++i) {
    const int64_t target = result[2 - c.size() + i];
    broadcastable = c[i] == 1 || c[i] == target;
  }
  if (!broadcastable) {
    throwInputError(op, "c", formatDims(c) + " is not broadcastable to " + formatDims(result));
  }
  return {TensorInfo{in[0].dtype, result}};
}

}  // namespace qaic::ir::rules
