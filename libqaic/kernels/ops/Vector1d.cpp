// SPDX-License-Identifier: Apache-2.0
// LightNet's small vector ops: submean, rearange, pick1d, sort1d.
#include <algorithm>
#include <cstring>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makeSubmean(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dims.size() != 3 || dst.dims.size() != 3) throwKernelError(ctx.op, "input 'src': expected [H, W, C]");
  const auto mean = ctx.op.numbers("mean");
  const int64_t H = src.dims[0], W = src.dims[1], C = src.dims[2];
  if (static_cast<int64_t>(mean.size()) < C) throwKernelError(ctx.op, "param 'mean': fewer values than channels");
  return makeKernel([&src, &dst, mean, H, W, C] {
    visitDTypePair(src.dtype, dst.dtype, [&](auto inTag, auto outTag) {
      using In = typename decltype(inTag)::type;
      using Out = typename decltype(outTag)::type;
      const In* in = src.as<In>();
      Out* out = dst.as<Out>();
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            out[(c * H + h) * W + w] = fromDouble<Out>(toDouble(in[(h * W + w) * C + c]) - mean[c]);
    });
  });
}

std::unique_ptr<Kernel> makeRearange(const BuildContext& ctx) {
  Tensor& dst = ctx.output("dst");
  const double start = ctx.op.number("start");
  const double step = ctx.op.number("step");
  return makeKernel([&dst, start, step] {
    visitDType(dst.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = dst.as<T>();
      const int64_t n = dst.count();
      for (int64_t i = 0; i < n; ++i) out[i] = fromDouble<T>(start + step * static_cast<double>(i));
    });
  });
}

std::unique_ptr<Kernel> makePick1d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& index = ctx.input("src_index");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src_index", index.dtype, {ir::DType::Int32});
  if (src.dtype != dst.dtype) throwKernelError(ctx.op, "output dtype differs from input 'src'");
  const int64_t len = ctx.op.integer("len");
  const int64_t stride = ctx.op.integer("stride");
  if (index.count() < len) {
    throwKernelError(ctx.op,
                     "input 'src_index': " + std::to_string(index.count()) + " indices for len " + std::to_string(len));
  }
  if (dst.count() != len * stride) throwKernelError(ctx.op, "output 'dst': size is not len*stride");
  const ir::Op& op = ctx.op;
  return makeKernel([&op, &src, &index, &dst, len, stride] {
    const std::size_t chunk = static_cast<std::size_t>(stride) * ir::dtypeSize(src.dtype);
    const int32_t* idx = index.as<int32_t>();
    for (int64_t k = 0; k < len; ++k) {
      if (idx[k] < 0 || (static_cast<int64_t>(idx[k]) + 1) * stride > src.count()) {
        throwKernelError(op, "input 'src_index': index " + std::to_string(idx[k]) + " at " + std::to_string(k) +
                                 " is outside 'src'");
      }
      std::memcpy(dst.data() + k * chunk, src.data() + idx[k] * chunk, chunk);
    }
  });
}

std::unique_ptr<Kernel> makeSort1d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src_key");
  Tensor& dst = ctx.output("dst_key");
  if (src.dtype != dst.dtype || src.count() != dst.count()) throwKernelError(ctx.op, "output differs from input");
  const bool descending = ctx.op.string("dir") == "TL_SORT_DIR_DESCENDING";
  return makeKernel([&src, &dst, descending] {
    if (&src != &dst && src.bytes() != 0) std::memcpy(dst.data(), src.data(), src.bytes());
    visitDType(dst.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* data = dst.as<T>();
      // A strict weak order even with NaNs: they sort after every number in either direction.
      auto less = [descending](const T& a, const T& b) {
        const double x = toDouble(a), y = toDouble(b);
        if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
        return descending ? x > y : x < y;
      };
      if constexpr (std::is_arithmetic_v<T> && sizeof(T) <= 4) {
        std::stable_sort(data, data + dst.count(), less);
      } else {
        // (u)int64 above 2^53 would compare equal through double: compare natively.
        if constexpr (std::is_integral_v<T>) {
          if (descending) {
            std::stable_sort(data, data + dst.count(), [](T a, T b) { return a > b; });
          } else {
            std::stable_sort(data, data + dst.count(), [](T a, T b) { return a < b; });
          }
        } else {
          std::stable_sort(data, data + dst.count(), less);
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
