// elew, elew_bcast, relu, lrelu, sigmoid, clip, batchnorm. Plain loops over contiguous data,
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
#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels::ops {
namespace {

enum class ElewOp { Mul, Div, Sum, Sub, Max, Min, Pow };

ElewOp parseElewOp(const ir::Op& op) {
  const std::string& name = op.string("elew_op");
  if (name == "TL_MUL") return ElewOp::Mul;
  if (name == "TL_DIV") return ElewOp::Div;
  if (name == "TL_SUM") return ElewOp::Sum;
  if (name == "TL_SUB") return ElewOp::Sub;
  if (name == "TL_MAX") return ElewOp::Max;
  if (name == "TL_MIN") return ElewOp::Min;
  if (name == "TL_POW") return ElewOp::Pow;
  throwKernelError(op, "param 'elew_op': unknown value '" + name + "'");
}

template <typename T>
struct Arith {
  // Native arithmetic for float/double; wrapping arithmetic for integers; float16 and bool go
  // through double and convert back with the usual rule.
  template <ElewOp kOp>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (kOp == ElewOp::Mul) return a * b;
      if constexpr (kOp == ElewOp::Div) return a / b;
      if constexpr (kOp == ElewOp::Sum) return a + b;
      if constexpr (kOp == ElewOp::Sub) return a - b;
      if constexpr (kOp == ElewOp::Max) return a > b ? a : b;
      if constexpr (kOp == ElewOp::Min) return a < b ? a : b;
      if constexpr (kOp == ElewOp::Pow) return std::pow(a, b);
    } else if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      if constexpr (kOp == ElewOp::Mul) return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      if constexpr (kOp == ElewOp::Sum) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      if constexpr (kOp == ElewOp::Sub) return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
      if constexpr (kOp == ElewOp::Div) {  // zero divisors are rejected before the loop
        if constexpr (std::is_signed_v<T>) {
          if (b == T(-1)) return static_cast<T>(static_cast<U>(0) - static_cast<U>(a));
        }
        return static_cast<T>(a / b);
      }
      if constexpr (kOp == ElewOp::Max) return a > b ? a : b;
      if constexpr (kOp == ElewOp::Min) return a < b ? a : b;
      if constexpr (kOp == ElewOp::Pow) return fromDouble<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    } else {
      return fromDouble<T>(Arith<double>::template apply<kOp>(toDouble(a), toDouble(b)));
    }
  }
};

template <typename T, ElewOp kOp>
void elewLoop(const Tensor& a, const Tensor& b, Tensor& dst, const std::vector<int64_t>& sa,
              const std::vector<int64_t>& sb, bool same) {
  const T* x = a.as<T>();
  const T* y = b.as<T>();
  T* out = dst.as<T>();
  const int64_t n = dst.count();
  if (same) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = Arith<T>::template apply<kOp>(x[i], y[i]);
    return;
  }
  // Broadcast: an odometer over dst carrying an offset into each source.
  const std::size_t rank = dst.dims.size();
  if (n == 0) return;
  if (rank == 0) {
    out[0] = Arith<T>::template apply<kOp>(x[0], y[0]);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = dst.dims[rank - 1];
  const int64_t ia = sa[rank - 1], ib = sb[rank - 1];
  int64_t oa = 0, ob = 0;
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t i = 0; i < inner; ++i) out[o + i] = Arith<T>::template apply<kOp>(x[oa + i * ia], y[ob + i * ib]);
    for (std::size_t axis = rank - 1; axis-- > 0;) {
      oa += sa[axis];
      ob += sb[axis];
      if (++index[axis] < dst.dims[axis]) break;
      oa -= sa[axis] * dst.dims[axis];
      ob -= sb[axis] * dst.dims[axis];
      index[axis] = 0;
    }
  }
}

template <typename T>
bool hasZero(const Tensor& t) {
  const T* p = t.as<T>();
  return std::any_of(p, p + t.count(), [](T v) { return v == T(0); });
}

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
    ir::DType::Double, ir::DType::Float,  ir::DType::Float16, ir::DType::Int64, ir::DType::Int32, ir::DType::Int16,
    ir::DType::Int8,   ir::DType::UInt64, ir::DType::UInt32,  ir::DType::UInt16, ir::DType::UInt8, ir::DType::Bool};

}  // namespace

std::unique_ptr<Kernel> makeElew(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  if (a.dtype != b.dtype || a.dtype != dst.dtype) throwKernelError(ctx.op, "inputs 'src1' and 'src2' differ in dtype");
  const bool same = a.dims == dst.dims && b.dims == dst.dims;
  if (!same && (a.dims.size() > dst.dims.size() || b.dims.size() > dst.dims.size())) {
    throwKernelError(ctx.op, "inputs do not broadcast to the output");
  }
  const auto sa = broadcastStrides(a.dims, dst.dims);
  const auto sb = broadcastStrides(b.dims, dst.dims);
  const ElewOp kind = parseElewOp(ctx.op);
  const ir::Op& op = ctx.op;
  return makeKernel([&op, &a, &b, &dst, sa, sb, same, kind] {
    visitDType(dst.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) {
        if (kind == ElewOp::Div && hasZero<T>(b)) throwKernelError(op, "input 'src2': integer division by zero");
      }
      switch (kind) {
        case ElewOp::Mul: return elewLoop<T, ElewOp::Mul>(a, b, dst, sa, sb, same);
        case ElewOp::Div: return elewLoop<T, ElewOp::Div>(a, b, dst, sa, sb, same);
        case ElewOp::Sum: return elewLoop<T, ElewOp::Sum>(a, b, dst, sa, sb, same);
        case ElewOp::Sub: return elewLoop<T, ElewOp::Sub>(a, b, dst, sa, sb, same);
        case ElewOp::Max: return elewLoop<T, ElewOp::Max>(a, b, dst, sa, sb, same);
        case ElewOp::Min: return elewLoop<T, ElewOp::Min>(a, b, dst, sa, sb, same);
        case ElewOp::Pow: return elewLoop<T, ElewOp::Pow>(a, b, dst, sa, sb, same);
      }
    });
  });
}

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
