// SPDX-License-Identifier: Apache-2.0
// elew, elew_bcast, compare, logical, where: NumPy broadcasting (Broadcast.hpp) over every
// element type. Each (operation, type) pair is one run loop; contiguous and scalar operands get
// their own `omp simd` loops. Integer arithmetic wraps (two's complement) instead of
// overflowing; float16 and bool compute through double and convert back by the usual rule.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

// Clang reports every `omp simd` loop it leaves scalar (a call such as pow, float16 through
// double); those loops are correct as they are, so that report is not an error here.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#include "ir/OpRegistry.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/ops/Broadcast.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

enum class Arith { Mul, Div, Sum, Sub, Max, Min, Pow, Mod, FMod, PRelu };
enum class Compare { Equal, Less, LessEqual, Greater, GreaterEqual };
enum class Logic { And, Or, Xor };

template <typename T, Arith kOp>
T arith(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (kOp == Arith::Mul) return a * b;
    if constexpr (kOp == Arith::Div) return a / b;
    if constexpr (kOp == Arith::Sum) return a + b;
    if constexpr (kOp == Arith::Sub) return a - b;
    if constexpr (kOp == Arith::Max) return a > b ? a : b;
    if constexpr (kOp == Arith::Min) return a < b ? a : b;
    if constexpr (kOp == Arith::Pow) return std::pow(a, b);
    if constexpr (kOp == Arith::FMod) return std::fmod(a, b);
    if constexpr (kOp == Arith::Mod) {  // the sign of the divisor, as Python's %
      const T r = std::fmod(a, b);
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    if constexpr (kOp == Arith::PRelu) return a < 0 ? a * b : a;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (kOp == Arith::Mul) return wrappingMul(a, b);
    if constexpr (kOp == Arith::Sum) return wrappingAdd(a, b);
    if constexpr (kOp == Arith::Sub) return wrappingSub(a, b);
    // Zero divisors are rejected before the loop; MIN / -1 wraps.
    if constexpr (kOp == Arith::Div || kOp == Arith::FMod || kOp == Arith::Mod) {
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return kOp == Arith::Div ? wrappingSub(T(0), a) : T(0);
      }
      if constexpr (kOp == Arith::Div) return static_cast<T>(a / b);
      const T r = static_cast<T>(a % b);
      if constexpr (kOp == Arith::Mod && std::is_signed_v<T>)
        return r != 0 && (r < 0) != (b < 0) ? static_cast<T>(r + b) : r;
      return r;
    }
    if constexpr (kOp == Arith::Max) return a > b ? a : b;
    if constexpr (kOp == Arith::Min) return a < b ? a : b;
    if constexpr (kOp == Arith::Pow) return fromDouble<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    if constexpr (kOp == Arith::PRelu) {
      if constexpr (std::is_signed_v<T>) return a < 0 ? wrappingMul(a, b) : a;
      return a;
    }
  } else {
    return fromDouble<T>(arith<double, kOp>(toDouble(a), toDouble(b)));
  }
}

template <typename T, Compare kOp>
uint8_t compare(T a, T b) {
  if constexpr (std::is_arithmetic_v<T>) {
    if constexpr (kOp == Compare::Equal) return a == b;
    if constexpr (kOp == Compare::Less) return a < b;
    if constexpr (kOp == Compare::LessEqual) return a <= b;
    if constexpr (kOp == Compare::Greater) return a > b;
    if constexpr (kOp == Compare::GreaterEqual) return a >= b;
  } else {
    return compare<double, kOp>(toDouble(a), toDouble(b));
  }
}

// The run loop of `f(a, b)`: separate loops for the step patterns that vectorize.
template <typename In, typename Out, typename F>
void binaryRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, F f) {
  const In* a = reinterpret_cast<const In*>(operands[0]);
  const In* b = reinterpret_cast<const In*>(operands[1]);
  Out* o = reinterpret_cast<Out*>(out);
  if (steps[0] == 1 && steps[1] == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (steps[0] == 0 && steps[1] == 1) {
    const In x = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(x, b[i]);
  } else if (steps[0] == 1 && steps[1] == 0) {
    const In y = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], y);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * steps[0]], b[i * steps[1]]);
  }
}

template <typename T, Arith kOp>
void arithRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, const void*) {
  binaryRun<T, T>(operands, steps, out, n, [](T a, T b) { return arith<T, kOp>(a, b); });
}

template <typename T, Compare kOp>
void compareRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, const void*) {
  binaryRun<T, uint8_t>(operands, steps, out, n, [](T a, T b) { return compare<T, kOp>(a, b); });
}

template <Logic kOp>
void logicRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, const void*) {
  binaryRun<uint8_t, uint8_t>(operands, steps, out, n, [](uint8_t a, uint8_t b) -> uint8_t {
    const bool x = a != 0, y = b != 0;  // any nonzero byte is true
    if constexpr (kOp == Logic::And) return x && y;
    if constexpr (kOp == Logic::Or) return x || y;
    return x != y;
  });
}

// Elements move as same-sized unsigned integers (visitElementSize): where never needs the value.
template <typename T>
void whereRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, const void*) {
  const uint8_t* c = reinterpret_cast<const uint8_t*>(operands[0]);
  const T* x = reinterpret_cast<const T*>(operands[1]);
  const T* y = reinterpret_cast<const T*>(operands[2]);
  T* o = reinterpret_cast<T*>(out);
  if (steps[0] == 1 && steps[1] == 1 && steps[2] == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = c[i * steps[0]] ? x[i * steps[1]] : y[i * steps[2]];
  }
}

template <typename T>
RunFunction arithFunction(Arith op) {
  switch (op) {
    case Arith::Mul: return arithRun<T, Arith::Mul>;
    case Arith::Div: return arithRun<T, Arith::Div>;
    case Arith::Sum: return arithRun<T, Arith::Sum>;
    case Arith::Sub: return arithRun<T, Arith::Sub>;
    case Arith::Max: return arithRun<T, Arith::Max>;
    case Arith::Min: return arithRun<T, Arith::Min>;
    case Arith::Pow: return arithRun<T, Arith::Pow>;
    case Arith::Mod: return arithRun<T, Arith::Mod>;
    case Arith::FMod: return arithRun<T, Arith::FMod>;
    case Arith::PRelu: return arithRun<T, Arith::PRelu>;
  }
  return nullptr;
}

template <typename T>
RunFunction compareFunction(Compare op) {
  switch (op) {
    case Compare::Equal: return compareRun<T, Compare::Equal>;
    case Compare::Less: return compareRun<T, Compare::Less>;
    case Compare::LessEqual: return compareRun<T, Compare::LessEqual>;
    case Compare::Greater: return compareRun<T, Compare::Greater>;
    case Compare::GreaterEqual: return compareRun<T, Compare::GreaterEqual>;
  }
  return nullptr;
}

// A kernel that broadcasts its inputs to `dst` and runs `run` over the runs.
std::unique_ptr<Kernel> broadcastKernel(const BuildContext& ctx, std::vector<const Tensor*> inputs, Tensor& dst,
                                        RunFunction run, std::function<void()> check = {}) {
  std::vector<const ir::Dims*> dims;
  for (const Tensor* t : inputs) {
    if (t->dims.size() > dst.dims.size()) throwKernelError(ctx.op, "inputs do not broadcast to the output");
    dims.push_back(&t->dims);
  }
  BroadcastLayout layout = broadcastLayout(dst.dims, dims);
  return makeKernel([inputs = std::move(inputs), &dst, layout = std::move(layout), run, check = std::move(check)] {
    if (check) check();
    const std::byte* operands[3] = {};
    std::size_t sizes[3] = {};
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      operands[k] = inputs[k]->data();
      sizes[k] = ir::dtypeSize(inputs[k]->dtype);
    }
    forEachRun(layout, std::span(operands, inputs.size()), std::span(sizes, inputs.size()), dst.data(),
               ir::dtypeSize(dst.dtype), run, nullptr);
  });
}

template <typename T>
bool hasZero(const Tensor& t) {
  const T* p = t.as<T>();
  return std::any_of(p, p + t.count(), [](T v) { return v == T(0); });
}

}  // namespace

std::unique_ptr<Kernel> makeElew(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  if (a.dtype != b.dtype || a.dtype != dst.dtype) throwKernelError(ctx.op, "inputs 'src1' and 'src2' differ in dtype");
  const Arith kind = enumParam<Arith>(ctx.op, "elew_op", ir::kElewBcastOps);
  const RunFunction run = visitDType(dst.dtype,
                                     [&](auto tag) { return arithFunction<typename decltype(tag)::type>(kind); });
  std::function<void()> check;
  const bool divides = kind == Arith::Div || kind == Arith::Mod || kind == Arith::FMod;
  if (divides && ir::dtypeSize(dst.dtype) > 0 && dst.dtype != ir::DType::Float && dst.dtype != ir::DType::Double &&
      dst.dtype != ir::DType::Float16 && dst.dtype != ir::DType::Bool) {
    const ir::Op& op = ctx.op;
    check = [&op, &b] {
      const bool zero = visitDType(b.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) return hasZero<T>(b);
        return false;
      });
      if (zero) throwKernelError(op, "input 'src2': integer division by zero");
    };
  }
  return broadcastKernel(ctx, {&a, &b}, dst, run, std::move(check));
}

std::unique_ptr<Kernel> makeCompare(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  if (a.dtype != b.dtype) throwKernelError(ctx.op, "inputs 'src1' and 'src2' differ in dtype");
  requireDTypes(ctx.op, "dst", dst.dtype, {ir::DType::Bool});
  const Compare kind = enumParam<Compare>(ctx.op, "compare_op", ir::kCompareOps);
  const RunFunction run = visitDType(a.dtype,
                                     [&](auto tag) { return compareFunction<typename decltype(tag)::type>(kind); });
  return broadcastKernel(ctx, {&a, &b}, dst, run);
}

std::unique_ptr<Kernel> makeLogical(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  for (const Tensor* t : {&a, &b, static_cast<const Tensor*>(&dst)}) {
    requireDTypes(ctx.op, "src1", t->dtype, {ir::DType::Bool});
  }
  constexpr RunFunction kRuns[] = {logicRun<Logic::And>, logicRun<Logic::Or>, logicRun<Logic::Xor>};
  return broadcastKernel(ctx, {&a, &b}, dst,
                         kRuns[static_cast<int>(enumParam<Logic>(ctx.op, "logical_op", ir::kLogicalOps))]);
}

std::unique_ptr<Kernel> makeWhere(const BuildContext& ctx) {
  const Tensor& condition = ctx.input("condition");
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "condition", condition.dtype, {ir::DType::Bool});
  if (a.dtype != b.dtype || a.dtype != dst.dtype) throwKernelError(ctx.op, "inputs 'src1' and 'src2' differ in dtype");
  const RunFunction run = visitElementSize(
      ir::dtypeSize(dst.dtype), [](auto tag) -> RunFunction { return whereRun<typename decltype(tag)::type>; });
  return broadcastKernel(ctx, {&condition, &a, &b}, dst, run);
}

}  // namespace qaic::kernels::ops
