// SPDX-License-Identifier: Apache-2.0
// relu, lrelu, sigmoid, clip, batchnorm. Plain loops over contiguous data,
// marked `omp simd`: each element depends on its own inputs only, so they vectorize even where
// the compiler cannot prove that input and output do not overlap (-O2's cost model then keeps
// a scalar loop). Integer arithmetic wraps (two's complement) instead of overflowing.
#include <algorithm>
#include <cmath>

// Clang reports every `omp simd` loop it leaves scalar (a call such as pow, float16 through
// double); those loops are correct as they are, so that report is not an error here.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

template <typename F>
std::unique_ptr<Kernel> unary(const BuildContext& ctx, std::initializer_list<ir::DType> allowed, F f) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, allowed);
  if (src.dtype != dst.dtype || src.count() != dst.count()) throwKernelError(ctx.op, "output differs from input");
  return makeKernel([&src, &dst, f] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      const int64_t n = src.count();
      if constexpr (std::is_arithmetic_v<T>) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
      } else {  // float16 and bool: computed in double, converted back by the usual rule
        for (int64_t i = 0; i < n; ++i) out[i] = fromDouble<T>(f(toDouble(in[i])));
      }
    });
  });
}

constexpr std::initializer_list<ir::DType> kAllTypes = {
    ir::DType::Double, ir::DType::Float,  ir::DType::Float16, ir::DType::Int64,  ir::DType::Int32, ir::DType::Int16,
    ir::DType::Int8,   ir::DType::UInt64, ir::DType::UInt32,  ir::DType::UInt16, ir::DType::UInt8, ir::DType::Bool};

}  // namespace

std::unique_ptr<Kernel> makeRelu(const BuildContext& ctx) {
  return unary(ctx, kAllTypes, [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}

std::unique_ptr<Kernel> makeLrelu(const BuildContext& ctx) {
  const double slope = ctx.op.number("negslope");
  return unary(ctx, {ir::DType::Float, ir::DType::Double}, [slope](auto x) {
    using T = decltype(x);
    return x >= T(0) ? x : static_cast<T>(x * static_cast<T>(slope));
  });
}

std::unique_ptr<Kernel> makeSigmoid(const BuildContext& ctx) {
  return unary(ctx, {ir::DType::Float, ir::DType::Double}, [](auto x) {
    using T = decltype(x);
    return static_cast<T>(T(1) / (T(1) + std::exp(-x)));
  });
}

std::unique_ptr<Kernel> makeClip(const BuildContext& ctx) {
  const double low = ctx.op.number("min");
  const double high = ctx.op.number("max");
  return unary(ctx, kAllTypes, [low, high](auto x) {
    using T = decltype(x);
    const T lo = fromDouble<T>(low), hi = fromDouble<T>(high);
    return std::min(std::max(x, lo), hi);
  });
}

std::unique_ptr<Kernel> makeBatchnorm(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  const Tensor* params[4] = {&ctx.input("scale"), &ctx.input("offset"), &ctx.input("mean"), &ctx.input("var")};
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  if (src.dims.size() < 2) throwKernelError(ctx.op, "input 'src': expected [N, C, ...]");
  const int64_t C = src.dims[1];
  for (const Tensor* p : params) {
    if (p->dtype != src.dtype || p->count() != C) {
      throwKernelError(ctx.op, "scale, offset, mean and var must be [C] of the input's dtype");
    }
  }
  const double epsilon = ctx.op.number("epsilon");
  const int64_t N = src.dims[0];
  const int64_t spatial = C == 0 ? 0 : src.count() / (N * C);
  return makeKernel([&src, &dst, params, epsilon, N, C, spatial] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = src.as<T>();
        T* out = dst.as<T>();
        const T *scale = params[0]->as<T>(), *offset = params[1]->as<T>();
        const T *mean = params[2]->as<T>(), *var = params[3]->as<T>();
        for (int64_t c = 0; c < C; ++c) {
          const T k = static_cast<T>(scale[c] / std::sqrt(static_cast<double>(var[c]) + epsilon));
          const T b = offset[c] - mean[c] * k;
          for (int64_t n = 0; n < N; ++n) {
            const T* x = in + (n * C + c) * spatial;
            T* y = out + (n * C + c) * spatial;
            for (int64_t i = 0; i < spatial; ++i) y[i] = x[i] * k + b;
          }
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
