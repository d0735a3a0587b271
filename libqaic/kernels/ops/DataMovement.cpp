// SPDX-License-Identifier: Apache-2.0
// slice, reshape / flatten, transpose, concat, pad, strided_slice, expand, tile, trilu:
// byte-exact moves for every dtype.
#include <algorithm>
#include <cstring>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Broadcast.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

int64_t product(const ir::Dims& dims, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

void requireSameType(const BuildContext& ctx, const Tensor& src, const Tensor& dst) {
  if (src.dtype != dst.dtype) {
    throwKernelError(ctx.op, "output dtype " + std::string(ir::dtypeName(dst.dtype)) + " differs from input " +
                                 std::string(ir::dtypeName(src.dtype)));
  }
}

// dst[o] = src[base + offset(o)], the offsets following `strides` over `dims` (dst's elements
// in row-major order): transpose, strided_slice and tile are this copy with their own strides.
// A large copy (attention's keys transposed at every decode step: 4 Mi elements a layer) is
// split over the op's threads along its first axis longer than 1.
void stridedCopy(const Tensor& src, Tensor& dst, const ir::Dims& dims, const std::vector<int64_t>& strides,
                 int64_t base = 0, int threads = 1) {
  constexpr int64_t kParallelElements = int64_t{1} << 20;
  visitElementSize(ir::dtypeSize(src.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = src.as<T>() + base;
    T* out = dst.as<T>();
    std::size_t axis = 0;
    while (axis + 1 < dims.size() && dims[axis] == 1) ++axis;
    const bool split = threads > 1 && !dims.empty() && dims[axis] >= threads &&
                       ir::elementCount(dims) >= kParallelElements;
    if (!split) {
      forEachStrided(dims, strides, [&](int64_t o, int64_t s) { out[o] = in[s]; });
      return;
    }
    const ir::Dims inner(dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, dims.end());
    const std::vector<int64_t> innerStrides(strides.begin() + static_cast<std::ptrdiff_t>(axis) + 1, strides.end());
    const int64_t innerCount = ir::elementCount(inner), extent = dims[axis], stride = strides[axis];
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int part = 0; part < threads; ++part) {
      for (int64_t i = extent * part / threads; i < extent * (part + 1) / threads; ++i) {
        const T* from = in + i * stride;
        T* to = out + i * innerCount;
        forEachStrided(inner, innerStrides, [&](int64_t o, int64_t s) { to[o] = from[s]; });
      }
    }
  });
}

// Reflect without repeating the edge (ONNX "reflect"), for any distance outside [0, n).
int64_t reflectIndex(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

}  // namespace

std::unique_ptr<Kernel> makeSlice(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  const auto axis = static_cast<std::size_t>(ctx.op.integer("axis"));
  const int64_t start = ctx.op.integer("start");
  if (axis >= src.dims.size() || start < 0 || start + dst.dims[axis] > src.dims[axis]) {
    throwKernelError(ctx.op, "slice outside the source");
  }
  const std::size_t esize = ir::dtypeSize(src.dtype);
  const int64_t outer = product(src.dims, 0, axis);
  const auto inner = static_cast<std::size_t>(product(src.dims, axis + 1, src.dims.size())) * esize;
  const auto srcBlock = static_cast<std::size_t>(src.dims[axis]) * inner;
  const auto dstBlock = static_cast<std::size_t>(dst.dims[axis]) * inner;
  const auto offset = static_cast<std::size_t>(start) * inner;
  return makeKernel([&src, &dst, outer, srcBlock, dstBlock, offset] {
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst.data() + o * dstBlock, src.data() + o * srcBlock + offset, dstBlock);
    }
  });
}

// The result is usually a view of the source (MemoryPlan): then nothing moves, and a view of a
// constant is a constant. A result in caller memory (an io output) is copied.
std::unique_ptr<Kernel> makeReshape(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  if (src.bytes() != dst.bytes()) throwKernelError(ctx.op, "element count changes");
  if (dst.data() == src.data()) {
    dst.constant = src.constant;
    return makeKernel([] {});
  }
  return makeKernel([&src, &dst] {
    if (src.bytes() != 0) std::memcpy(dst.data(), src.data(), src.bytes());
  });
}

std::unique_ptr<Kernel> makeTranspose(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  const auto axes = ctx.op.integers("axes");
  if (axes.size() != src.dims.size()) throwKernelError(ctx.op, "param 'axes': length differs from the rank");
  const auto srcStrides = rowMajorStrides(src.dims);
  std::vector<int64_t> strides(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || static_cast<std::size_t>(axes[i]) >= axes.size()) {
      throwKernelError(ctx.op, "param 'axes': not a permutation");
    }
    strides[i] = srcStrides[static_cast<std::size_t>(axes[i])];
  }
  const int threads = std::max(ctx.options.threads, 1);
  return makeKernel([&src, &dst, strides, threads] { stridedCopy(src, dst, dst.dims, strides, 0, threads); });
}

std::unique_ptr<Kernel> makeConcat(const BuildContext& ctx) {
  const Tensor& a = ctx.input("src1");
  const Tensor& b = ctx.input("src2");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, a, dst);
  requireSameType(ctx, b, dst);
  const auto axis = static_cast<std::size_t>(ctx.op.integer("axis"));
  if (axis >= dst.dims.size() || a.dims.size() != dst.dims.size() || b.dims.size() != dst.dims.size()) {
    throwKernelError(ctx.op, "param 'axis': out of range");
  }
  const std::size_t esize = ir::dtypeSize(dst.dtype);
  const int64_t outer = product(dst.dims, 0, axis);
  const auto inner = static_cast<std::size_t>(product(dst.dims, axis + 1, dst.dims.size())) * esize;
  const auto blockA = static_cast<std::size_t>(a.dims[axis]) * inner;
  const auto blockB = static_cast<std::size_t>(b.dims[axis]) * inner;
  return makeKernel([&a, &b, &dst, outer, blockA, blockB] {
    std::byte* out = dst.data();
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(out, a.data() + o * blockA, blockA);
      out += blockA;
      std::memcpy(out, b.data() + o * blockB, blockB);
      out += blockB;
    }
  });
}

std::unique_ptr<Kernel> makePad(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  const auto pads = ctx.op.integers("pads");
  const std::size_t rank = src.dims.size();
  if (pads.size() != 2 * rank) throwKernelError(ctx.op, "param 'pads': length is not 2 * rank");
  const std::string mode = ctx.op.string("mode");
  const double value = ctx.op.number("value");
  if (mode == "reflect") {
    for (std::size_t i = 0; i < rank; ++i) {
      if (src.dims[i] == 0) throwKernelError(ctx.op, "reflect padding of an empty axis");
    }
  }
  return makeKernel([&src, &dst, pads, mode, value, rank] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T fill = fromDouble<T>(value);
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      const auto srcStrides = rowMajorStrides(src.dims);
      std::vector<int64_t> index(rank, 0);
      const int64_t total = dst.count();
      for (int64_t o = 0; o < total; ++o) {
        int64_t offset = 0;
        bool inside = true;
        for (std::size_t axis = 0; axis < rank; ++axis) {
          int64_t i = index[axis] - pads[axis];
          const int64_t n = src.dims[axis];
          if (i < 0 || i >= n) {
            if (mode == "constant") {
              inside = false;
              break;
            }
            i = mode == "edge" ? (i < 0 ? 0 : n - 1) : reflectIndex(i, n);
          }
          offset += i * srcStrides[axis];
        }
        out[o] = inside ? in[offset] : fill;
        for (std::size_t axis = rank; axis-- > 0;) {
          if (++index[axis] < dst.dims[axis]) break;
          index[axis] = 0;
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops

namespace qaic::kernels::ops {
namespace {

template <typename T>
void copyRun(const std::byte* const* operands, const int64_t* steps, std::byte* out, int64_t n, const void*) {
  const T* in = reinterpret_cast<const T*>(operands[0]);
  T* o = reinterpret_cast<T*>(out);
  if (steps[0] == 0) {
    std::fill(o, o + n, in[0]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = in[i * steps[0]];
  }
}

}  // namespace

std::unique_ptr<Kernel> makeStridedSlice(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  const auto starts = ctx.op.integers("starts");
  const auto steps = ctx.op.integers("steps");
  const std::size_t rank = src.dims.size();
  if (starts.size() != rank || steps.size() != rank || dst.dims.size() != rank) {
    throwKernelError(ctx.op, "params 'starts' and 'steps' need one value per axis");
  }
  const auto srcStrides = rowMajorStrides(src.dims);
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t last = starts[i] + (dst.dims[i] - 1) * steps[i];
    if (starts[i] < 0 || starts[i] >= src.dims[i] || last < 0 || last >= src.dims[i]) {
      throwKernelError(ctx.op, "the slice leaves the source on axis " + std::to_string(i));
    }
    strides[i] = srcStrides[i] * steps[i];
    base += starts[i] * srcStrides[i];
  }
  const int threads = std::max(ctx.options.threads, 1);
  return makeKernel([&src, &dst, strides, base, threads] { stridedCopy(src, dst, dst.dims, strides, base, threads); });
}

std::unique_ptr<Kernel> makeExpand(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  if (src.dims.size() > dst.dims.size()) throwKernelError(ctx.op, "input 'src' does not broadcast to the output");
  const ir::Dims* operand[] = {&src.dims};
  BroadcastLayout layout = broadcastLayout(dst.dims, operand);
  const RunFunction run = visitElementSize(
      ir::dtypeSize(src.dtype), [](auto tag) -> RunFunction { return copyRun<typename decltype(tag)::type>; });
  return makeKernel([&src, &dst, layout = std::move(layout), run] {
    const std::byte* operands[] = {src.data()};
    const std::size_t sizes[] = {ir::dtypeSize(src.dtype)};
    forEachRun(layout, operands, sizes, dst.data(), ir::dtypeSize(dst.dtype), run, nullptr);
  });
}

// The output seen as [r0, d0, r1, d1, ...] (repeat, then the source dim, per axis) reads the
// source with strides [0, s0, 0, s1, ...].
std::unique_ptr<Kernel> makeTile(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  const auto repeats = ctx.op.integers("repeats");
  if (repeats.size() != src.dims.size()) throwKernelError(ctx.op, "param 'repeats': one value per axis");
  const auto srcStrides = rowMajorStrides(src.dims);
  ir::Dims dims;
  std::vector<int64_t> strides;
  for (std::size_t i = 0; i < src.dims.size(); ++i) {
    dims.insert(dims.end(), {repeats[i], src.dims[i]});
    strides.insert(strides.end(), {0, srcStrides[i]});
  }
  const int threads = std::max(ctx.options.threads, 1);
  return makeKernel([&src, &dst, dims, strides, threads] { stridedCopy(src, dst, dims, strides, 0, threads); });
}

// Keeps the elements on and above (upper) or on and below (lower) the k-th diagonal of each
// matrix of the last two axes; the rest become zero (all-zero bytes in every dtype).
std::unique_ptr<Kernel> makeTrilu(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireSameType(ctx, src, dst);
  if (src.dims.size() < 2) throwKernelError(ctx.op, "input 'src': rank must be >= 2");
  const bool upper = ctx.op.boolean("upper");
  const int64_t k = ctx.op.integer("k");
  const int64_t rows = src.dims[src.dims.size() - 2], cols = src.dims.back();
  const int64_t matrices = rows * cols == 0 ? 0 : src.count() / (rows * cols);
  const std::size_t size = ir::dtypeSize(src.dtype);
  return makeKernel([&src, &dst, upper, k, rows, cols, matrices, size] {
    if (&src != &dst) std::memcpy(dst.data(), src.data(), src.bytes());
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        // Upper keeps columns j >= i + k; lower keeps j <= i + k.
        const int64_t edge = std::clamp<int64_t>(upper ? i + k : i + k + 1, 0, cols);
        const int64_t from = upper ? 0 : edge, to = upper ? edge : cols;
        std::byte* row = dst.data() + static_cast<std::size_t>((m * rows + i) * cols) * size;
        std::memset(row + static_cast<std::size_t>(from) * size, 0, static_cast<std::size_t>(to - from) * size);
      }
    }
  });
}

}  // namespace qaic::kernels::ops
