// SPDX-License-Identifier: Apache-2.0
// cumsum and topk: per line along one axis, a running sum and the k largest or smallest
// elements. Integer sums wrap like the other integer reductions; floating ones accumulate in
// double.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makeCumsum(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (dst.dtype == ir::DType::Bool || dst.dtype != src.dtype)
    throwKernelError(ctx.op, "input 'src': a numeric type, the output's");
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  const bool exclusive = ctx.op.boolean("exclusive"), reverse = ctx.op.boolean("reverse");
  return makeKernel([&src, &dst, v, exclusive, reverse] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Sum = std::conditional_t<std::is_integral_v<T>, T, double>;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const int64_t base = o * v.extent * v.inner + i;
          Sum sum{};
          for (int64_t step = 0; step < v.extent; ++step) {
            const int64_t at = base + (reverse ? v.extent - 1 - step : step) * v.inner;
            const T x = in[at];  // read before the write: src may be dst
            Sum next;
            if constexpr (std::is_integral_v<T>) {
              next = wrappingAdd(sum, x);
            } else {
              next = sum + toDouble(x);
            }
            const Sum shown = exclusive ? sum : next;
            if constexpr (std::is_integral_v<T>) {
              out[at] = shown;
            } else {
              out[at] = fromDouble<T>(shown);
            }
            sum = next;
          }
        }
      }
    });
  });
}

// The k first of each line in the order largest (or smallest) first, equal values by index:
// the order ONNX's TopK defines for sorted output, used also when `sorted` is false.
std::unique_ptr<Kernel> makeTopk(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  Tensor& indices = ctx.output("indices");
  if (dst.dtype != src.dtype) throwKernelError(ctx.op, "output 'dst': dtype differs from input 'src'");
  requireDTypes(ctx.op, "indices", indices.dtype, {ir::DType::Int64});
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  const int64_t k = ctx.op.integer("k");
  if (k < 1 || k > v.extent)
    throwKernelError(ctx.op, "param 'k': " + std::to_string(k) + " is not in [1, " + std::to_string(v.extent) + "]");
  const bool largest = ctx.op.boolean("largest");
  return makeKernel([&src, &dst, &indices, v, k, largest] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      int64_t* where = indices.as<int64_t>();
      std::vector<int64_t> order(static_cast<std::size_t>(v.extent));
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const T* line = in + o * v.extent * v.inner + i;
          auto value = [&](int64_t at) {
            if constexpr (std::is_arithmetic_v<T>) {
              return line[at * v.inner];
            } else {
              return toDouble(line[at * v.inner]);
            }
          };
          std::iota(order.begin(), order.end(), int64_t{0});
          // NaN ranks above every number (PyTorch's order), which also keeps the comparison a
          // strict weak order that partial_sort can rely on.
          std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
            const auto x = value(a), y = value(b);
            const bool xNan = x != x, yNan = y != y;
            if (xNan || yNan) return xNan && yNan ? a < b : (largest ? xNan : yNan);
            if (x != y) return largest ? x > y : x < y;
            return a < b;
          });
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = (o * k + j) * v.inner + i;
            out[at] = line[order[static_cast<std::size_t>(j)] * v.inner];
            where[at] = order[static_cast<std::size_t>(j)];
          }
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
