// SPDX-License-Identifier: Apache-2.0
// matmul / matmul_trans_b with a float16 src2, and matmul_gathered_b: matmul (or matmul_trans_b)
// of src1 and the rows of src2 a gather_nd(src2, indices, batch_dims = rank - 2) would select,
// read where they lie. A decoder's attention reads its float16 KV cache this way: the positions
// efficient-transformers' indices mark as unfilled (INT32_MAX) are rows of zeros that the product
// skips, so a step reads the filled positions only and copies none.
#include "kernels/ops/HalfMatmulKernel.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "kernels/ops/Factories.hpp"
#include "kernels/ops/HalfMatmul.hpp"
#include "kernels/ops/Indexing.hpp"
#include "kernels/ops/NdGather.hpp"

namespace qaic::kernels::ops {
namespace {

// Where B's rows come from when they are gathered: `rowsPerMatrix` tuples of `indices` per batch
// matrix of B, each naming one row of src2.
struct RowGather {
  const ir::Op* op = nullptr;
  const Tensor* indices = nullptr;
  NdIndexing nd;
  int64_t rowsPerMatrix = 0;
};

// Each batch's columns split over the op's threads when there are fewer batches than threads.
class HalfMatmulKernel final : public Kernel {
 public:
  HalfMatmulKernel(const Tensor& a, const Tensor& b, Tensor& d, std::vector<int64_t> aOffsets,
                   std::vector<int64_t> bOffsets, int64_t m, int64_t k, int64_t n, bool bTransposed, int threads,
                   std::optional<RowGather> gather)
      : a_(a),
        b_(b),
        d_(d),
        aOffsets_(std::move(aOffsets)),
        bOffsets_(std::move(bOffsets)),
        m_(m),
        k_(k),
        n_(n),
        bTransposed_(bTransposed),
        gather_(std::move(gather)) {
    const auto batches = static_cast<int64_t>(aOffsets_.size());
    // Below about a million multiply-adds a parallel region costs more than it saves.
    threads_ = batches * m * k * n >= (int64_t{1} << 20) ? std::max(threads, 1) : 1;
    chunks_ = batches >= threads_ ? 1 : std::clamp<int64_t>((threads_ + batches - 1) / batches, 1, (n + 15) / 16);
  }

  void run() override {
    const float* a = a_.as<float>();
    const auto* b = static_cast<const uint16_t*>(static_cast<const void*>(b_.data()));
    float* d = d_.as<float>();
    if (gather_) {
      // Every index is checked before anything is written: a bad one fails the run naming it.
      const auto offsets = tupleOffsets(*gather_->op, gather_->nd, *gather_->indices,
                                        gather_->nd.batches * gather_->nd.tuplesPerBatch);
      rows_.resize(offsets.size());
      for (std::size_t r = 0; r < offsets.size(); ++r) rows_[r] = offsets[r] == kNoElement ? nullptr : b + offsets[r];
    }
    const int64_t items = static_cast<int64_t>(aOffsets_.size()) * chunks_;
    const int64_t matrix = k_ * n_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t batch = item / chunks_, chunk = item % chunks_;
      const int64_t bOffset = bOffsets_[static_cast<std::size_t>(batch)];
      HalfProduct product{a + aOffsets_[static_cast<std::size_t>(batch)],
                          b + bOffset,
                          d + batch * m_ * n_,
                          m_,
                          k_,
                          n_,
                          bTransposed_,
                          nullptr};
      // The gathered B of this batch is matrix number bOffset / matrix of the gather's output.
      if (gather_) product.rows = rows_.data() + bOffset / matrix * gather_->rowsPerMatrix;
      halfMatmulColumns(product, n_ * chunk / chunks_, n_ * (chunk + 1) / chunks_);
    }
  }

 private:
  const Tensor& a_;
  const Tensor& b_;
  Tensor& d_;
  std::vector<int64_t> aOffsets_, bOffsets_;
  int64_t m_, k_, n_;
  bool bTransposed_;
  std::optional<RowGather> gather_;
  std::vector<const uint16_t*> rows_;  // the gathered rows of this run, null for a marked one
  int threads_ = 1;
  int64_t chunks_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> makeHalfMatmulKernel(const BuildContext& ctx, const Tensor& a, const Tensor& b, Tensor& d,
                                             std::vector<int64_t> aOffsets, std::vector<int64_t> bOffsets, int64_t m,
                                             int64_t k, int64_t n, bool bTransposed) {
  return std::make_unique<HalfMatmulKernel>(a, b, d, std::move(aOffsets), std::move(bOffsets), m, k, n, bTransposed,
                                            ctx.options.threads, std::nullopt);
}

std::unique_ptr<Kernel> makeMatmulGatheredB(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& source = ctx.input("src2");
  const Tensor& indices = ctx.input("indices");
  Tensor& dst = ctx.output("dst");
  const bool transposed = ctx.op.boolean("trans_b");
  if (a.dtype != ir::DType::Float || source.dtype != ir::DType::Float16 || dst.dtype != ir::DType::Float)
    throwKernelError(ctx.op, "needs a TL_FLOAT 'src1' and a TL_FLOAT16 'src2'");
  requireDTypes(ctx.op, "indices", indices.dtype, {ir::DType::Int64, ir::DType::Int32});
  const std::size_t rank = source.dims.size();
  if (rank < 2 || indices.dims.size() != rank || indices.dims.back() != 1)
    throwKernelError(ctx.op, "needs 'src2' [.., P, X] and 'indices' [.., N, 1] of its rank");
  // The gathered B, as gather_nd with batch_dims = rank - 2 gives it: [.., N, X].
  ir::Dims gathered(source.dims.begin(), source.dims.end() - 1);
  gathered[rank - 2] = indices.dims[rank - 2];
  gathered.push_back(source.dims.back());
  ir::Dims bd = gathered;  // as the product reads it, [.., K, N]
  if (transposed) std::swap(bd[rank - 1], bd[rank - 2]);
  const auto dims = productDims(a.dims, bd, dst.count());
  if (!dims) throwKernelError(ctx.op, "inner dimensions of 'src1' and the gathered 'src2' differ");
  // The gathered matrices' offsets in the output's batch order, in gather_nd's [.., N, X] layout.
  gathered.insert(gathered.begin(), dims->d.size() - gathered.size(), 1);
  RowGather gather{&ctx.op, &indices, ndIndexing(ctx, source, indices, rank - 2), indices.dims[rank - 2]};
  return std::make_unique<HalfMatmulKernel>(a, source, dst, batchOffsets(dims->a, dims->batch),
                                            batchOffsets(gathered, dims->batch), dims->m, dims->k, dims->n, transposed,
                                            ctx.options.threads, std::move(gather));
}

}  // namespace qaic::kernels::ops
