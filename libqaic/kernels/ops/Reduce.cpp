// SPDX-License-Identifier: Apache-2.0
// reduce and arg_reduce. Float reductions run on oneDNN's reduction primitive; log_sum,
// log_sum_exp and the other element types accumulate in a loop over the source (in double for
// floating types, in 64-bit integers that wrap for integer ones).
#include <cmath>
#include <limits>

#include "ir/OpRegistry.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

// In the order of ir::kReduceOps.
enum class Reduction { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

// The source dims with the reduced axes set to 1 (the output as if keepdims).
ir::Dims keptDims(const ir::Dims& src, const std::vector<int64_t>& axes) {
  ir::Dims kept = src;
  for (int64_t axis : axes) kept[static_cast<std::size_t>(axis)] = 1;
  return kept;
}

std::optional<dnnl::algorithm> dnnlReduction(Reduction r, float& p) {
  using A = dnnl::algorithm;
  p = 0;
  switch (r) {
    case Reduction::Sum: return A::reduction_sum;
    case Reduction::Mean: return A::reduction_mean;
    case Reduction::Max: return A::reduction_max;
    case Reduction::Min: return A::reduction_min;
    case Reduction::Prod: return A::reduction_mul;
    case Reduction::SumSquare: p = 2; return A::reduction_norm_lp_power_p_sum;
    case Reduction::L1: p = 1; return A::reduction_norm_lp_sum;
    case Reduction::L2: p = 2; return A::reduction_norm_lp_sum;
    default: return std::nullopt;
  }
}

std::unique_ptr<Kernel> dnnlReduceKernel(const BuildContext& ctx, dnnl::algorithm algorithm, float p, const Tensor& src,
                                         const Tensor& dst, const ir::Dims& kept) {
  const auto srcMd = rowMajorDesc(src.dims.empty() ? ir::Dims{1} : src.dims);
  const auto dstMd = rowMajorDesc(kept.empty() ? ir::Dims{1} : kept);
  const dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(algorithm, srcMd, dstMd, p, 0.0f), userScratchpad(),
                                           ctx.engine);
  return std::make_unique<PrimitiveKernel>(
      ctx, pd,
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, wrap(srcMd, ctx.engine, src)},
                                            {DNNL_ARG_DST, wrap(dstMd, ctx.engine, dst)}});
}

template <typename T>
using Accumulator =
    std::conditional_t<std::is_integral_v<T>, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

// One pass over the source per step, accumulating into one value per output element.
template <typename T>
void reduceLoop(Reduction r, const Tensor& src, Tensor& dst, const ir::Dims& kept) {
  using A = Accumulator<T>;
  const auto outStrides = broadcastStrides(kept, src.dims);
  const int64_t outCount = dst.count();
  const T* in = src.as<T>();
  const auto value = [&](int64_t i) -> A {
    if constexpr (std::is_integral_v<T>)
      return static_cast<A>(in[i]);
    else
      return toDouble(in[i]);
  };
  std::vector<A> acc(static_cast<std::size_t>(outCount));
  std::vector<double> top;  // log_sum_exp: the maximum, subtracted for range
  const int64_t reducedCount = outCount == 0 ? 0 : src.count() / outCount;
  switch (r) {
    case Reduction::Max:
    case Reduction::Min: {
      std::vector<bool> seen(acc.size(), false);
      forEachStrided(src.dims, outStrides, [&](int64_t s, int64_t o) {
        const A v = value(s);
        const auto k = static_cast<std::size_t>(o);
        if (!seen[k] || (r == Reduction::Max ? v > acc[k] : v < acc[k])) acc[k] = v;
        seen[k] = true;
      });
      break;
    }
    case Reduction::Prod:
      std::fill(acc.begin(), acc.end(), A(1));
      forEachStrided(src.dims, outStrides, [&](int64_t s, int64_t o) {
        A& a = acc[static_cast<std::size_t>(o)];
        if constexpr (std::is_integral_v<A>)
          a = wrappingMul(a, value(s));
        else
          a *= value(s);
      });
      break;
    case Reduction::LogSumExp:
      top.assign(acc.size(), -std::numeric_limits<double>::infinity());
      forEachStrided(src.dims, outStrides, [&](int64_t s, int64_t o) {
        top[static_cast<std::size_t>(o)] = std::max(top[static_cast<std::size_t>(o)], static_cast<double>(value(s)));
      });
      forEachStrided(src.dims, outStrides, [&](int64_t s, int64_t o) {
        acc[static_cast<std::size_t>(o)] += static_cast<A>(
            std::exp(static_cast<double>(value(s)) - top[static_cast<std::size_t>(o)]));
      });
      break;
    default:
      forEachStrided(src.dims, outStrides, [&](int64_t s, int64_t o) {
        A v = value(s);
        A& a = acc[static_cast<std::size_t>(o)];
        if constexpr (std::is_integral_v<A>) {  // wrapping, like the arithmetic ops
          if (r == Reduction::SumSquare || r == Reduction::L2) v = wrappingMul(v, v);
          if constexpr (std::is_signed_v<A>) {
            if (r == Reduction::L1 && v < A(0)) v = wrappingSub(A(0), v);
          }
          a = wrappingAdd(a, v);
        } else {
          if (r == Reduction::SumSquare || r == Reduction::L2) v *= v;
          if (r == Reduction::L1 && v < A(0)) v = -v;
          a += v;
        }
      });
  }
  T* out = dst.as<T>();
  for (std::size_t k = 0; k < acc.size(); ++k) {
    double v = static_cast<double>(acc[k]);
    switch (r) {
      case Reduction::Mean: v /= static_cast<double>(reducedCount); break;
      case Reduction::L2: v = std::sqrt(v); break;
      case Reduction::LogSum: v = std::log(v); break;
      case Reduction::LogSumExp: v = std::log(v) + top[k]; break;
      default:
        if constexpr (std::is_integral_v<T>) {
          out[k] = static_cast<T>(acc[k]);  // exact, wrapping like the arithmetic ops
          continue;
        }
    }
    out[k] = fromDouble<T>(v);
  }
}

}  // namespace

std::unique_ptr<Kernel> makeReduce(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dtype != dst.dtype) throwKernelError(ctx.op, "output dtype differs from input");
  const std::string& name = ctx.op.string("reduce_op");
  const auto* found = std::find(std::begin(ir::kReduceOps), std::end(ir::kReduceOps), name);
  if (found == std::end(ir::kReduceOps)) throwKernelError(ctx.op, "param 'reduce_op': unknown value '" + name + "'");
  const auto r = static_cast<Reduction>(found - std::begin(ir::kReduceOps));
  const auto axes = ctx.op.integers("axes");
  for (int64_t axis : axes) {
    if (axis < 0 || static_cast<std::size_t>(axis) >= src.dims.size())
      throwKernelError(ctx.op, "param 'axes': out of range");
  }
  const ir::Dims kept = keptDims(src.dims, axes);
  float p = 0;
  if (src.dtype == ir::DType::Float && kept != src.dims) {
    if (const auto algorithm = dnnlReduction(r, p)) {
      return withDnnl(ctx.op, [&] { return dnnlReduceKernel(ctx, *algorithm, p, src, dst, kept); });
    }
  }
  requireDTypes(
      ctx.op, "src", src.dtype,
      {ir::DType::Double, ir::DType::Float, ir::DType::Float16, ir::DType::Int64, ir::DType::Int32, ir::DType::Int16,
       ir::DType::Int8, ir::DType::UInt64, ir::DType::UInt32, ir::DType::UInt16, ir::DType::UInt8});
  return makeKernel([r, &src, &dst, kept] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, Bool8>) reduceLoop<T>(r, src, dst, kept);
    });
  });
}

std::unique_ptr<Kernel> makeArgReduce(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "dst", dst.dtype, {ir::DType::Int64});
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  const int64_t outer = v.outer, inner = v.inner, extent = v.extent;
  const bool max = ctx.op.string("arg_op") == "max";
  const bool last = ctx.op.boolean("select_last_index");
  return makeKernel([&src, &dst, outer, inner, extent, max, last] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      int64_t* out = dst.as<int64_t>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* x = in + o * extent * inner + i;
          int64_t best = 0;
          for (int64_t k = 1; k < extent; ++k) {
            bool better;
            if constexpr (std::is_arithmetic_v<T>) {
              better = max ? (last ? x[k * inner] >= x[best * inner] : x[k * inner] > x[best * inner])
                           : (last ? x[k * inner] <= x[best * inner] : x[k * inner] < x[best * inner]);
            } else {
              const double a = toDouble(x[k * inner]), b = toDouble(x[best * inner]);
              better = max ? (last ? a >= b : a > b) : (last ? a <= b : a < b);
            }
            if (better) best = k;
          }
          out[o * inner + i] = best;
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
