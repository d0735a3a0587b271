// SPDX-License-Identifier: Apache-2.0
// matmul (NumPy semantics, batch broadcasting) and gemm on oneDNN's matmul primitive; a
// constant right-hand side is packed once at build time.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/DTypes.hpp"
#include "kernels/mx/Mxfp6Matmul.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/HalfMatmulKernel.hpp"
#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::desc stridedDesc(const memory::dims& dims, const memory::dims& strides) {
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::dims plainStrides(const memory::dims& dims) {
  const auto s = rowMajorStrides(ir::Dims(dims.begin(), dims.end()));
  return memory::dims(s.begin(), s.end());
}

class MatmulKernel final : public Kernel {
 public:
  // a: [.., M, K] (strides aStrides), b: [.., K, N] (strides bStrides), d: [.., M, N] plain.
  // `weightArg`: the op's input holding b.
  MatmulKernel(const BuildContext& ctx, const Tensor& a, const memory::dims& aDims, const memory::dims& aStrides,
               std::string_view weightArg, const Tensor& b, const memory::dims& bDims, const memory::dims& bStrides,
               Tensor& d, const memory::dims& dDims, float alpha)
      : stream_(ctx.stream) {
    withDnnl(ctx.op, [&] {
      const auto aMd = stridedDesc(aDims, aStrides);
      const auto bMd = stridedDesc(bDims, bStrides);
      const auto dMd = stridedDesc(dDims, plainStrides(dDims));
      const memory::desc anyB(bDims, memory::data_type::f32, Tag::any);
      dnnl::primitive_attr attr = userScratchpad();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aMd, b.constant ? anyB : bMd, dMd), attr, ctx.engine);
      weights_.emplace(ctx, weightArg, wrap(bMd, ctx.engine, b), pd.weights_desc());
      primitive_ = dnnl::matmul(pd);
      scratchpad_ = ctx.scratchpad.attach(pd, ctx.engine);
      a_ = wrap(aMd, ctx.engine, a);
      d_ = wrap(dMd, ctx.engine, d);
      return 0;
    });
  }

  void run() override {
    weights_->refresh();
    primitive_.execute(stream_, {{DNNL_ARG_SRC, a_},
                                 {DNNL_ARG_WEIGHTS, weights_->memory()},
                                 {DNNL_ARG_DST, d_},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    stream_.wait();
  }

 private:
  dnnl::stream& stream_;
  dnnl::primitive primitive_;
  std::optional<PackedWeights> weights_;
  memory a_, d_, scratchpad_;
};

// dst += beta * C, C broadcast (NumPy, unidirectional) to [M, N].
class GemmKernel final : public Kernel {
 public:
  GemmKernel(std::unique_ptr<Kernel> product, const Tensor& c, Tensor& dst, float beta)
      : product_(std::move(product)), c_(c), dst_(dst), beta_(beta), strides_(broadcastStrides(c.dims, dst.dims)) {}

  void run() override {
    product_->run();
    if (beta_ == 0.0f) return;
    const float* c = c_.as<float>();
    float* out = dst_.as<float>();
    forEachStrided(dst_.dims, strides_, [&](int64_t o, int64_t s) { out[o] += beta_ * c[s]; });
  }

 private:
  std::unique_ptr<Kernel> product_;
  const Tensor& c_;
  Tensor& dst_;
  float beta_;
  std::vector<int64_t> strides_;
};

// dst[M, N] = alpha * a[M, K] . W with W an MXFP6-encoded constant (qaic-exec -mxfp6-matmul),
// read in place from the constant's bytes (the loaded container), never dequantized whole.
class Mxfp6MatmulKernel final : public Kernel {
 public:
  Mxfp6MatmulKernel(const BuildContext& ctx, const Tensor& a, const Tensor& weight, Tensor& dst, int64_t k, int64_t n,
                    uint8_t reductionAxis, float alpha)
      : a_(a), dst_(dst), alpha_(alpha), threads_(ctx.options.threads) {
    const ir::WeightTensor& w = *weight.encoded;
    if (w.reductionAxis != reductionAxis) {
      throwKernelError(ctx.op, "encoded weight '" + w.name + "' is reduced along dims[" +
                                   std::to_string(w.reductionAxis) + "], the op multiplies along dims[" +
                                   std::to_string(reductionAxis) + "]");
    }
    matrix_ = {w.encoding == ir::WeightEncoding::Mxfp6E2M3 ? mx::ElementFormat::E2M3 : mx::ElementFormat::E3M2, w.data,
               k, n};
    if (w.data.size() != mx::encodedBytes(k, n)) {
      throwKernelError(ctx.op, "encoded weight '" + w.name + "' holds " + std::to_string(w.data.size()) + " bytes, [" +
                                   std::to_string(k) + ", " + std::to_string(n) + "] needs " +
                                   std::to_string(mx::encodedBytes(k, n)));
    }
    rows_ = k == 0 ? 0 : a.count() / k;
  }

  void run() override { mx::mxfp6Matmul(matrix_, a_.as<float>(), rows_, dst_.as<float>(), alpha_, threads_); }

 private:
  const Tensor& a_;
  Tensor& dst_;
  mx::Mxfp6Matrix matrix_;
  int64_t rows_ = 0;
  float alpha_;
  int threads_;
};

// The types oneDNN's matmul lacks (double, integers): a plain loop, integers wrapping.
template <typename T>
void matmulLoop(const T* a, const T* b, T* d, const std::vector<int64_t>& aOffsets,
                const std::vector<int64_t>& bOffsets, int64_t m, int64_t k, int64_t n) {
  for (std::size_t batch = 0; batch < aOffsets.size(); ++batch) {
    const T* x = a + aOffsets[batch];
    const T* y = b + bOffsets[batch];
    T* z = d + static_cast<int64_t>(batch) * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_integral_v<T>) {
          T sum = 0;
          for (int64_t p = 0; p < k; ++p) sum = wrappingAdd(sum, wrappingMul(x[i * k + p], y[p * n + j]));
          z[i * n + j] = sum;
        } else {
          T sum{};
          for (int64_t p = 0; p < k; ++p) sum += x[i * k + p] * y[p * n + j];
          z[i * n + j] = sum;
        }
      }
    }
  }
}

}  // namespace

namespace {

// matmul and matmul_trans_b: b holds [.., K, N], or with `bTransposed` [.., N, K].
std::unique_ptr<Kernel> makeProduct(const BuildContext& ctx, bool bTransposed) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  const bool halfB = a.dtype == ir::DType::Float && b.dtype == ir::DType::Float16;
  if ((a.dtype != b.dtype && !halfB) || a.dtype != dst.dtype)
    throwKernelError(ctx.op, "inputs 'src1' and 'src2' differ in dtype");
  requireDTypes(
      ctx.op, "src1", a.dtype,
      {ir::DType::Float, ir::DType::Double, ir::DType::Int64, ir::DType::Int32, ir::DType::UInt64, ir::DType::UInt32});
  if (a.dims.empty() || b.dims.empty()) throwKernelError(ctx.op, "matmul of a scalar");
  if (bTransposed && b.dims.size() < 2) throwKernelError(ctx.op, "input 'src2' needs two axes [.., N, K]");
  if (b.encoded) {
    // A 2-D weight shared by every row of a: a's leading dims flatten into M.
    if (bTransposed || a.dtype != ir::DType::Float || b.dims.size() != 2 || a.dims.back() != b.dims[0] ||
        a.dims.size() < 2 || dst.count() != a.count() / b.dims[0] * b.dims[1]) {
      throwKernelError(ctx.op, "an encoded 'src2' needs a float [.., M, K] 'src1' and a [K, N] weight");
    }
    return std::make_unique<Mxfp6MatmulKernel>(ctx, a, b, dst, b.dims[0], b.dims[1], 0, 1.0f);
  }
  ir::Dims bd = b.dims;  // as the product reads it, [.., K, N]
  if (bTransposed) std::swap(bd[bd.size() - 1], bd[bd.size() - 2]);
  const auto dims = productDims(a.dims, bd, dst.count());
  if (!dims) throwKernelError(ctx.op, "inner dimensions of 'src1' and 'src2' differ");
  const ir::Dims& ad = dims->a;
  bd = dims->b;
  const ir::Dims& dd = dims->d;
  const ir::Dims& batch = dims->batch;
  const std::size_t rank = dd.size();
  const int64_t m = dims->m, k = dims->k, n = dims->n;
  if (halfB) {
    return makeHalfMatmulKernel(ctx, a, b, dst, batchOffsets(ad, batch), batchOffsets(bd, batch), m, k, n, bTransposed);
  }
  if (a.dtype != ir::DType::Float) {
    if (bTransposed) throwKernelError(ctx.op, "matmul_trans_b needs float or float16 operands");
    return makeKernel([&a, &b, &dst, aOffsets = batchOffsets(ad, batch), bOffsets = batchOffsets(bd, batch), m, k, n] {
      visitDType(a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_arithmetic_v<T>)
          matmulLoop(a.as<T>(), b.as<T>(), dst.as<T>(), aOffsets, bOffsets, m, k, n);
      });
    });
  }
  const memory::dims A(ad.begin(), ad.end()), B(bd.begin(), bd.end()), D(dd.begin(), dd.end());
  memory::dims bStrides = plainStrides(B);
  if (bTransposed) {
    // b's memory is [.., N, K] row-major: element (.., q, j) of the product's [.., K, N] view.
    bStrides[rank - 2] = 1;
    bStrides[rank - 1] = k;
  }
  return std::make_unique<MatmulKernel>(ctx, a, A, plainStrides(A), "src2", b, B, bStrides, dst, D, 1.0f);
}

}  // namespace

std::unique_ptr<Kernel> makeMatmul(const BuildContext& ctx) { return makeProduct(ctx, false); }

std::unique_ptr<Kernel> makeMatmulTransB(const BuildContext& ctx) { return makeProduct(ctx, true); }

std::unique_ptr<Kernel> makeGemm(const BuildContext& ctx) {
  const Tensor& a = ctx.input("a");
  const Tensor& b = ctx.input("b");
  const Tensor& c = ctx.input("c");
  Tensor& dst = ctx.output("dst");
  for (std::string_view arg : {"a", "b", "c"}) requireDTypes(ctx.op, arg, ctx.input(arg).dtype, {ir::DType::Float});
  if (a.dims.size() != 2 || b.dims.size() != 2 || dst.dims.size() != 2)
    throwKernelError(ctx.op, "a, b and dst must be 2-D");
  const bool ta = ctx.op.boolean("trans_a"), tb = ctx.op.boolean("trans_b");
  const int64_t M = ta ? a.dims[1] : a.dims[0];
  const int64_t K = ta ? a.dims[0] : a.dims[1];
  const int64_t N = tb ? b.dims[0] : b.dims[1];
  if ((tb ? b.dims[1] : b.dims[0]) != K || dst.dims != ir::Dims{M, N})
    throwKernelError(ctx.op, "a and b do not multiply");
  bool broadcasts = c.dims.size() <= 2;
  for (std::size_t i = 0; broadcasts && i < c.dims.size(); ++i) {
    const int64_t target = dst.dims[2 - c.dims.size() + i];
    broadcasts = c.dims[i] == 1 || c.dims[i] == target;
  }
  if (!broadcasts) throwKernelError(ctx.op, "input 'c' does not broadcast to [M, N]");
  const auto alpha = static_cast<float>(ctx.op.number("alpha"));
  const auto beta = static_cast<float>(ctx.op.number("beta"));
  if (b.encoded) {
    if (ta) throwKernelError(ctx.op, "an encoded 'b' needs trans_a = 0");
    auto product = std::make_unique<Mxfp6MatmulKernel>(ctx, a, b, dst, K, N, tb ? 1 : 0, alpha);
    return std::make_unique<GemmKernel>(std::move(product), c, dst, beta);
  }
  const memory::dims aStrides = ta ? memory::dims{1, M} : memory::dims{K, 1};
  const memory::dims bStrides = tb ? memory::dims{1, K} : memory::dims{N, 1};
  auto product = std::make_unique<MatmulKernel>(ctx, a, memory::dims{M, K}, aStrides, "b", b, memory::dims{K, N},
                                                bStrides, dst, memory::dims{M, N}, alpha);
  return std::make_unique<GemmKernel>(std::move(product), c, dst, beta);
}

}  // namespace qaic::kernels::ops
