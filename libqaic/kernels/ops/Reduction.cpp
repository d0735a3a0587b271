// SPDX-License-Identifier: Apache-2.0
// maxreduce, maxreduce_arg, dot_product, global_avgpool.
#include <cmath>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels::ops {
namespace {}  // namespace

std::unique_ptr<Kernel> makeMaxreduce(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  Tensor* arg = ctx.op.optype == "maxreduce_arg" ? &ctx.output("arg") : nullptr;
  if (arg) requireDTypes(ctx.op, "arg", arg->dtype, {ir::DType::Int32});
  if (dst.dtype != src.dtype) throwKernelError(ctx.op, "output dtype differs from input");
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  return makeKernel([&src, &dst, arg, v] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      int32_t* where = arg ? arg->as<int32_t>() : nullptr;
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const int64_t base = o * v.extent * v.inner + i;
          T best = in[base];
          int64_t bestIndex = 0;
          for (int64_t k = 1; k < v.extent; ++k) {
            const T x = in[base + k * v.inner];
            bool greater;
            if constexpr (std::is_integral_v<T>) {
              greater = x > best;  // native: (u)int64 beyond 2^53 stay distinct
            } else {
              greater = toDouble(x) > toDouble(best);
            }
            if (greater) {  // strictly greater: the first max wins
              best = x;
              bestIndex = k;
            }
          }
          out[o * v.inner + i] = best;
          if (where) where[o * v.inner + i] = static_cast<int32_t>(bestIndex);
        }
      }
    });
  });
}

std::unique_ptr<Kernel> makeDotProduct(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  if (a.dtype != b.dtype || a.dtype != dst.dtype || a.count() != b.count() || dst.count() != 1) {
    throwKernelError(ctx.op, "inputs 'src1' and 'src2' must have the same dtype and element count");
  }
  return makeKernel([&a, &b, &dst] {
    visitDType(a.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = a.as<T>();
      const T* y = b.as<T>();
      const int64_t n = a.count();
      if constexpr (std::is_integral_v<T>) {
        T sum = 0;  // wraps instead of overflowing
        for (int64_t i = 0; i < n; ++i) sum = wrappingAdd(sum, wrappingMul(x[i], y[i]));
        dst.as<T>()[0] = sum;
      } else {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += toDouble(x[i]) * toDouble(y[i]);
        dst.as<T>()[0] = fromDouble<T>(sum);
      }
    });
  });
}

std::unique_ptr<Kernel> makeGlobalAvgpool(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  if (src.dims.size() < 3) throwKernelError(ctx.op, "input 'src': expected [N, C, d1, ...]");
  const int64_t planes = src.dims[0] * src.dims[1];
  const int64_t spatial = planes == 0 ? 0 : src.count() / planes;
  return makeKernel([&src, &dst, planes, spatial] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = src.as<T>();
        T* out = dst.as<T>();
        for (int64_t p = 0; p < planes; ++p) {
          double sum = 0;
          for (int64_t i = 0; i < spatial; ++i) sum += in[p * spatial + i];
          out[p] = static_cast<T>(sum / static_cast<double>(spatial));
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
