// SPDX-License-Identifier: Apache-2.0
// layernorm, softmax, log_softmax. Float tensors run on oneDNN's layer normalization and
// softmax primitives; double ones on plain loops.
#include <cmath>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

// softmax / log_softmax on [outer, extent, inner] (the axis in the middle) as a 3-D tensor.
std::unique_ptr<Kernel> dnnlSoftmaxKernel(const BuildContext& ctx, const AxisView& v, bool logarithm, const Tensor& src,
                                          const Tensor& dst) {
  const auto md = rowMajorDesc({v.outer, v.extent, v.inner});
  const std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, wrap(md, ctx.engine, src)},
                                                      {DNNL_ARG_DST, wrap(md, ctx.engine, dst)}};
  const auto inference = dnnl::prop_kind::forward_inference;
  if (logarithm) {
    return std::make_unique<PrimitiveKernel>(
        ctx, dnnl::logsoftmax_forward::primitive_desc({inference, md, 1}, userScratchpad(), ctx.engine), args);
  }
  return std::make_unique<PrimitiveKernel>(
      ctx, dnnl::softmax_forward::primitive_desc({inference, md, 1}, userScratchpad(), ctx.engine), args);
}

// Normalizes each row of `inner` elements: [outer, inner] with scale and bias of [inner].
std::unique_ptr<Kernel> dnnlLayerNormKernel(const BuildContext& ctx, int64_t outer, int64_t inner, float epsilon,
                                            const Tensor& src, const Tensor& scale, const Tensor& bias,
                                            const Tensor& dst) {
  const auto md = rowMajorDesc({outer, inner});
  const auto channel = rowMajorDesc({inner});
  const dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, md, epsilon,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      userScratchpad(), ctx.engine);
  return std::make_unique<PrimitiveKernel>(
      ctx, pd,
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, wrap(md, ctx.engine, src)},
                                            {DNNL_ARG_DST, wrap(md, ctx.engine, dst)},
                                            {DNNL_ARG_SCALE, wrap(channel, ctx.engine, scale)},
                                            {DNNL_ARG_SHIFT, wrap(channel, ctx.engine, bias)}});
}

std::unique_ptr<Kernel> softmax(const BuildContext& ctx, bool logarithm) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  if (src.dtype == ir::DType::Float) {
    return withDnnl(ctx.op, [&] { return dnnlSoftmaxKernel(ctx, v, logarithm, src, dst); });
  }
  return makeKernel([&src, &dst, v, logarithm] {
    const double* in = src.as<double>();
    double* out = dst.as<double>();
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t base = o * v.extent * v.inner + i;
        double top = in[base];
        for (int64_t k = 1; k < v.extent; ++k) top = std::max(top, in[base + k * v.inner]);
        double sum = 0;
        for (int64_t k = 0; k < v.extent; ++k) sum += std::exp(in[base + k * v.inner] - top);  // shifted: no overflow
        for (int64_t k = 0; k < v.extent; ++k) {
          const double shifted = in[base + k * v.inner] - top;
          out[base + k * v.inner] = logarithm ? shifted - std::log(sum) : std::exp(shifted) / sum;
        }
      }
    }
  });
}

}  // namespace

std::unique_ptr<Kernel> makeSoftmax(const BuildContext& ctx) { return softmax(ctx, false); }
std::unique_ptr<Kernel> makeLogSoftmax(const BuildContext& ctx) { return softmax(ctx, true); }

std::unique_ptr<Kernel> makeLayernorm(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& scale = ctx.input("scale");
  const Tensor& bias = ctx.input("bias");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  const int64_t outer = v.outer, inner = v.extent * v.inner;
  if (scale.count() != inner || bias.count() != inner || scale.dtype != src.dtype || bias.dtype != src.dtype) {
    throwKernelError(ctx.op, "scale and bias must hold the normalized dims in the input's dtype");
  }
  const double epsilon = ctx.op.number("epsilon");
  if (src.dtype == ir::DType::Float) {
    return withDnnl(ctx.op, [&] {
      return dnnlLayerNormKernel(ctx, outer, inner, static_cast<float>(epsilon), src, scale, bias, dst);
    });
  }
  return makeKernel([&src, &scale, &bias, &dst, outer, inner, epsilon] {
    const double* in = src.as<double>();
    const double *gamma = scale.as<double>(), *beta = bias.as<double>();
    double* out = dst.as<double>();
    for (int64_t o = 0; o < outer; ++o) {
      const double* x = in + o * inner;
      double mean = 0, variance = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x[i];
      mean /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) variance += (x[i] - mean) * (x[i] - mean);
      const double norm = 1.0 / std::sqrt(variance / static_cast<double>(inner) + epsilon);
      for (int64_t i = 0; i < inner; ++i) out[o * inner + i] = (x[i] - mean) * norm * gamma[i] + beta[i];
    }
  });
}

}  // namespace qaic::kernels::ops
