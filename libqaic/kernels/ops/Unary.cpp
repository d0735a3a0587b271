// SPDX-License-Identifier: Apache-2.0
// unary: the math functions of ONNX one element at a time. Float tensors run on oneDNN's eltwise
// primitive where it has the function (vectorized exp, log, tanh, erf-based GELU, ...); every
// other function and element type is a plain loop, float16 computed in float.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#include "ir/OpRegistry.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

// In the order of ir::kUnaryFuncs.
enum class Func {
  Abs,
  Neg,
  Sign,
  Floor,
  Ceil,
  Round,
  Reciprocal,
  Sqrt,
  Exp,
  Log,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Tanh,
  Erf,
  Gelu,
  GeluTanh,
  Softplus,
  Softsign,
  HardSwish,
  HardSigmoid,
  Elu,
  Selu,
  Celu,
  ThresholdedRelu,
  Not
};

template <Func kF, typename T>
T apply(T x, T alpha, T beta) {
  using std::abs;
  if constexpr (kF == Func::Abs) {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return x < 0 ? static_cast<T>(T(0) - x) : x;
  }
  if constexpr (kF == Func::Neg) return static_cast<T>(T(0) - x);
  if constexpr (kF == Func::Sign) {
    if constexpr (std::is_unsigned_v<T>)
      return static_cast<T>(x != 0);
    else
      return static_cast<T>((T(0) < x) - (x < T(0)));
  }
  if constexpr (kF == Func::Not) return static_cast<T>(!x);
  if constexpr (std::is_floating_point_v<T>) {
    constexpr T kHalf = T(0.5), kOne = T(1);
    if constexpr (kF == Func::Floor) return std::floor(x);
    if constexpr (kF == Func::Ceil) return std::ceil(x);
    if constexpr (kF == Func::Round) return std::nearbyint(x);  // halves to even, as ONNX
    if constexpr (kF == Func::Reciprocal) return kOne / x;
    if constexpr (kF == Func::Sqrt) return std::sqrt(x);
    if constexpr (kF == Func::Exp) return std::exp(x);
    if constexpr (kF == Func::Log) return std::log(x);
    if constexpr (kF == Func::Sin) return std::sin(x);
    if constexpr (kF == Func::Cos) return std::cos(x);
    if constexpr (kF == Func::Tan) return std::tan(x);
    if constexpr (kF == Func::Asin) return std::asin(x);
    if constexpr (kF == Func::Acos) return std::acos(x);
    if constexpr (kF == Func::Atan) return std::atan(x);
    if constexpr (kF == Func::Sinh) return std::sinh(x);
    if constexpr (kF == Func::Cosh) return std::cosh(x);
    if constexpr (kF == Func::Asinh) return std::asinh(x);
    if constexpr (kF == Func::Acosh) return std::acosh(x);
    if constexpr (kF == Func::Atanh) return std::atanh(x);
    if constexpr (kF == Func::Tanh) return std::tanh(x);
    if constexpr (kF == Func::Erf) return std::erf(x);
    if constexpr (kF == Func::Gelu) return kHalf * x * (kOne + std::erf(x * T(0.70710678118654752440)));
    if constexpr (kF == Func::GeluTanh) {
      return kHalf * x * (kOne + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
    }
    if constexpr (kF == Func::Softplus) return x > T(20) ? x : std::log1p(std::exp(x));
    if constexpr (kF == Func::Softsign) return x / (kOne + abs(x));
    if constexpr (kF == Func::HardSwish) return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
    if constexpr (kF == Func::HardSigmoid) return std::min(std::max(alpha * x + beta, T(0)), kOne);
    if constexpr (kF == Func::Elu) return x > 0 ? x : alpha * (std::exp(x) - kOne);
    if constexpr (kF == Func::Selu) return beta * (x > 0 ? x : alpha * (std::exp(x) - kOne));
    if constexpr (kF == Func::Celu) return std::max(x, T(0)) + std::min(T(0), alpha * (std::exp(x / alpha) - kOne));
    if constexpr (kF == Func::ThresholdedRelu) return x > alpha ? x : T(0);
  }
  return x;
}

using UnaryLoop = void (*)(const std::byte* in, std::byte* out, int64_t n, double alpha, double beta);

template <Func kF, typename T>
void loop(const std::byte* in, std::byte* out, int64_t n, double alpha, double beta) {
  const T* x = reinterpret_cast<const T*>(in);
  T* y = reinterpret_cast<T*>(out);
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = apply<kF, T>(x[i], a, b);
}

// float16 in blocks through float.
template <Func kF>
void halfLoop(const std::byte* in, std::byte* out, int64_t n, double alpha, double beta) {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(in);
  uint16_t* y = reinterpret_cast<uint16_t*>(out);
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  for (int64_t i = 0; i < n; ++i) y[i] = floatToHalf(apply<kF, float>(halfToFloat(x[i]), a, b));
}

template <Func kF>
UnaryLoop loopFor(ir::DType type) {
  switch (type) {
    case ir::DType::Float: return loop<kF, float>;
    case ir::DType::Double: return loop<kF, double>;
    case ir::DType::Float16: return halfLoop<kF>;
    default: break;
  }
  if constexpr (kF == Func::Abs || kF == Func::Neg || kF == Func::Sign) {
    switch (type) {
      case ir::DType::Int64: return loop<kF, int64_t>;
      case ir::DType::Int32: return loop<kF, int32_t>;
      case ir::DType::Int16: return loop<kF, int16_t>;
      case ir::DType::Int8: return loop<kF, int8_t>;
      case ir::DType::UInt64: return loop<kF, uint64_t>;
      case ir::DType::UInt32: return loop<kF, uint32_t>;
      case ir::DType::UInt16: return loop<kF, uint16_t>;
      case ir::DType::UInt8: return loop<kF, uint8_t>;
      default: break;
    }
  }
  if constexpr (kF == Func::Not) {
    if (type == ir::DType::Bool) return loop<kF, uint8_t>;
  }
  return nullptr;
}

template <std::size_t... I>
UnaryLoop loopFor(Func f, ir::DType type, std::index_sequence<I...>) {
  UnaryLoop found = nullptr;
  ((static_cast<std::size_t>(f) == I ? (found = loopFor<static_cast<Func>(I)>(type), 0) : 0), ...);
  return found;
}

// The oneDNN algorithm computing `f` on floats, when there is one (log is not among them: its
// vectorized form is 1.4e-6 off at log(1) = 0, beyond ONNX's absolute tolerance).
struct DnnlEltwise {
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
};
std::optional<DnnlEltwise> dnnlEltwise(Func f, double alpha) {
  using A = dnnl::algorithm;
  switch (f) {
    case Func::Abs: return DnnlEltwise{A::eltwise_abs};
    case Func::Neg: return DnnlEltwise{A::eltwise_linear, -1.0f, 0.0f};
    case Func::Reciprocal: return DnnlEltwise{A::eltwise_pow, 1.0f, -1.0f};
    case Func::Sqrt: return DnnlEltwise{A::eltwise_sqrt};
    case Func::Exp: return DnnlEltwise{A::eltwise_exp};
    case Func::Tanh: return DnnlEltwise{A::eltwise_tanh};
    case Func::Gelu: return DnnlEltwise{A::eltwise_gelu_erf};
    case Func::GeluTanh: return DnnlEltwise{A::eltwise_gelu_tanh};
    case Func::Softplus: return DnnlEltwise{A::eltwise_soft_relu};
    case Func::HardSwish: return DnnlEltwise{A::eltwise_hardswish};
    case Func::Round: return DnnlEltwise{A::eltwise_round};
    case Func::Elu: return DnnlEltwise{A::eltwise_elu, static_cast<float>(alpha)};
    default: return std::nullopt;
  }
}

}  // namespace

std::unique_ptr<Kernel> makeUnary(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dtype != dst.dtype || src.count() != dst.count()) throwKernelError(ctx.op, "output differs from input");
  const std::string& name = ctx.op.string("func");
  const auto* found = std::find(std::begin(ir::kUnaryFuncs), std::end(ir::kUnaryFuncs), name);
  if (found == std::end(ir::kUnaryFuncs)) throwKernelError(ctx.op, "param 'func': unknown value '" + name + "'");
  const auto f = static_cast<Func>(found - std::begin(ir::kUnaryFuncs));
  const double alpha = ctx.op.number("alpha"), beta = ctx.op.number("beta");
  if (src.dtype == ir::DType::Float) {
    if (const auto e = dnnlEltwise(f, alpha)) {
      return withDnnl(ctx.op, [&] { return eltwiseKernel(ctx, e->algorithm, e->alpha, e->beta, src, dst); });
    }
  }
  const UnaryLoop run = loopFor(f, src.dtype, std::make_index_sequence<std::size(ir::kUnaryFuncs)>{});
  if (!run) {
    throwKernelError(
        ctx.op, "tensor 'src': dtype " + std::string(ir::dtypeName(src.dtype)) + " is not supported by '" + name + "'");
  }
  return makeKernel([&src, &dst, run, alpha, beta] { run(src.data(), dst.data(), src.count(), alpha, beta); });
}

}  // namespace qaic::kernels::ops
