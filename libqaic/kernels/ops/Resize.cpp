// resize and upsample over any rank. Both map an output coordinate to the input with the
// half-pixel rule of lightnet-ops.md, using the ratio of input to output extent on each axis
// (upsample's output extent being floor(scale * input)):
//   nearest: src = roundf((dst + 0.5) * in / out - 0.5), clamped to [0, in - 1]
//   linear:  x = (dst + 0.5) * in / out - 0.5 clamped to [0, in - 1], interpolated between
//            floor(x) and the next cell on every axis whose extent changes.
#include <cmath>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels::ops {
namespace {

struct AxisMap {
  std::vector<int64_t> low, high;  // source indices
  std::vector<float> weight;       // of `high`
};

AxisMap mapAxis(int64_t in, int64_t out, bool linear) {
  AxisMap m;
  m.low.resize(static_cast<std::size_t>(out));
  m.high.resize(static_cast<std::size_t>(out));
  m.weight.resize(static_cast<std::size_t>(out));
  const float ratio = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    const float x = (static_cast<float>(o) + 0.5f) * ratio - 0.5f;
    const auto i = static_cast<std::size_t>(o);
    if (!linear) {
      const int64_t s = std::clamp<int64_t>(static_cast<int64_t>(std::roundf(x)), 0, in - 1);
      m.low[i] = m.high[i] = s;
      m.weight[i] = 0.0f;
      continue;
    }
    const float c = std::clamp(x, 0.0f, static_cast<float>(in - 1));
    const auto lo = static_cast<int64_t>(std::floor(c));
    m.low[i] = lo;
    m.high[i] = std::min(lo + 1, in - 1);
    m.weight[i] = c - static_cast<float>(lo);
  }
  return m;
}

}  // namespace

std::unique_ptr<Kernel> makeResize(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dtype != dst.dtype || src.dims.size() != dst.dims.size()) throwKernelError(ctx.op, "output differs from input");
  const bool linear = ctx.op.string("mode") == "TL_LINEAR";
  if (linear) requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  std::vector<AxisMap> maps;
  for (std::size_t a = 0; a < src.dims.size(); ++a) maps.push_back(mapAxis(src.dims[a], dst.dims[a], linear));
  return makeKernel([&src, &dst, maps = std::move(maps), linear] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      const std::size_t rank = dst.dims.size();
      const auto strides = rowMajorStrides(src.dims);
      std::vector<std::size_t> changing;  // axes interpolated in linear mode
      for (std::size_t a = 0; a < rank; ++a) {
        if (src.dims[a] != dst.dims[a]) changing.push_back(a);
      }
      std::vector<int64_t> index(rank, 0);
      const int64_t total = dst.count();
      for (int64_t o = 0; o < total; ++o) {
        if constexpr (std::is_floating_point_v<T>) {
          if (linear) {
            int64_t base = 0;
            for (std::size_t a = 0; a < rank; ++a) base += maps[a].low[static_cast<std::size_t>(index[a])] * strides[a];
            double sum = 0;
            for (uint32_t corner = 0; corner < (1u << changing.size()); ++corner) {
              int64_t offset = base;
              double w = 1.0;
              for (std::size_t k = 0; k < changing.size(); ++k) {
                const std::size_t a = changing[k];
                const auto i = static_cast<std::size_t>(index[a]);
                if (corner & (1u << k)) {
                  offset += (maps[a].high[i] - maps[a].low[i]) * strides[a];
                  w *= maps[a].weight[i];
                } else {
                  w *= 1.0 - maps[a].weight[i];
                }
              }
              sum += w * in[offset];
            }
            out[o] = static_cast<T>(sum);
          }
        }
        if (!linear) {
          int64_t offset = 0;
          for (std::size_t a = 0; a < rank; ++a) offset += maps[a].low[static_cast<std::size_t>(index[a])] * strides[a];
          out[o] = in[offset];
        }
        for (std::size_t a = rank; a-- > 0;) {
          if (++index[a] < dst.dims[a]) break;
          index[a] = 0;
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
