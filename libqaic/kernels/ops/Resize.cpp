// SPDX-License-Identifier: Apache-2.0
// resize, upsample (LightNet) and interpolate (ONNX Resize) over any rank, separable per axis:
// each output coordinate maps to a source coordinate x, which selects 1 (nearest), 2 (linear)
// or 4 (cubic) source cells with weights; cells outside the source repeat its edge.
//
// interpolate's coordinate modes, with s the axis scale (output / input) and x' the output index:
//   half_pixel (x' + 0.5) / s - 0.5       pytorch_half_pixel: the same, 0 when the output is 1
//   align_corners x' * (in - 1) / (out - 1)   asymmetric x' / s
//   tf_half_pixel_for_nn (x' + 0.5) / s
// resize and upsample map as half_pixel with the ratio of the extents and round nearest
// halfway away from zero (lightnet-ops.md); linear clamps x to the source first.
#include <algorithm>
#include <array>
#include <cmath>

#include "ir/OpRegistry.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/ops/CubicWeights.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coordinates { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn };
enum class Rounding { PreferFloor, PreferCeil, Floor, Ceil, HalfAway };

struct Interpolation {
  Mode mode = Mode::Nearest;
  Coordinates coordinates = Coordinates::HalfPixel;
  Rounding rounding = Rounding::HalfAway;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool clampLinear = false;  // LightNet's linear clamps the coordinate into the source
};

// Per output index of one axis: `taps` source indices and their weights.
struct AxisMap {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// The resized length is the input's times the scale, not rounded (ONNX's reference: it differs
// from the output extent when scales, not sizes, fix the output).
double sourceCoordinate(const Interpolation& in, int64_t x, int64_t inExtent, double scale) {
  const double o = static_cast<double>(x);
  const double resized = static_cast<double>(inExtent) * scale;
  switch (in.coordinates) {
    case Coordinates::HalfPixel: return (o + 0.5) / scale - 0.5;
    case Coordinates::PytorchHalfPixel: return resized > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case Coordinates::AlignCorners: return resized == 1 ? 0.0 : o * static_cast<double>(inExtent - 1) / (resized - 1);
    case Coordinates::Asymmetric: return o / scale;
    case Coordinates::TfHalfPixelForNn: return (o + 0.5) / scale;
  }
  return 0.0;
}

int64_t roundNearest(double x, Rounding r) {
  switch (r) {
    case Rounding::PreferFloor: return static_cast<int64_t>(std::ceil(x - 0.5));
    case Rounding::PreferCeil: return static_cast<int64_t>(std::floor(x + 0.5));
    case Rounding::Floor: return static_cast<int64_t>(std::floor(x));
    case Rounding::Ceil: return static_cast<int64_t>(std::ceil(x));
    case Rounding::HalfAway: return static_cast<int64_t>(std::round(x));
  }
  return 0;
}

AxisMap mapAxis(const Interpolation& in, int64_t inExtent, int64_t outExtent, double scale) {
  AxisMap m;
  m.taps = in.mode == Mode::Nearest ? 1 : in.mode == Mode::Linear ? 2 : 4;
  // An axis that keeps its extent at scale 1 maps every cell onto itself: one tap, weight 1.
  if (inExtent == outExtent && scale == 1.0 && in.coordinates != Coordinates::TfHalfPixelForNn) m.taps = 1;
  m.index.reserve(static_cast<std::size_t>(outExtent * m.taps));
  m.weight.reserve(m.index.capacity());
  const auto clampIndex = [inExtent](int64_t i) { return std::clamp<int64_t>(i, 0, inExtent - 1); };
  for (int64_t o = 0; o < outExtent; ++o) {
    double x = sourceCoordinate(in, o, inExtent, scale);
    if (m.taps == 1 && in.mode != Mode::Nearest) {
      m.index.push_back(o);
      m.weight.push_back(1.0);
      continue;
    }
    if (in.mode == Mode::Nearest) {
      m.index.push_back(clampIndex(roundNearest(x, in.rounding)));
      m.weight.push_back(1.0);
      continue;
    }
    if (in.clampLinear) x = std::clamp(x, 0.0, static_cast<double>(inExtent - 1));
    const double base = std::floor(x);
    const double r = x - base;
    const auto first = static_cast<int64_t>(base) - (m.taps == 4 ? 1 : 0);
    std::array<double, 4> w{1 - r, r, 0, 0};
    if (m.taps == 4) w = cubicWeights(r, in.cubicA);
    double total = 0;
    for (int t = 0; t < m.taps; ++t) {
      const int64_t i = first + t;
      if (in.excludeOutside && (i < 0 || i >= inExtent)) w[static_cast<std::size_t>(t)] = 0;
      total += w[static_cast<std::size_t>(t)];
    }
    for (int t = 0; t < m.taps; ++t) {
      m.index.push_back(clampIndex(first + t));
      m.weight.push_back(in.excludeOutside && total != 0 ? w[static_cast<std::size_t>(t)] / total
                                                         : w[static_cast<std::size_t>(t)]);
    }
  }
  return m;
}

std::unique_ptr<Kernel> resizeKernel(const BuildContext& ctx, const Interpolation& interpolation,
                                     const std::vector<double>& scales) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dtype != dst.dtype || src.dims.size() != dst.dims.size())
    throwKernelError(ctx.op, "output differs from input");
  if (interpolation.mode != Mode::Nearest)
    requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  std::vector<AxisMap> maps;
  std::vector<std::size_t> weighted;  // axes whose cells mix (more than one tap and a size change)
  for (std::size_t a = 0; a < src.dims.size(); ++a) {
    maps.push_back(mapAxis(interpolation, src.dims[a], dst.dims[a], scales[a]));
    if (maps.back().taps > 1) weighted.push_back(a);
  }
  if (weighted.size() > 8) throwKernelError(ctx.op, "at most 8 interpolated axes");
  return makeKernel([&src, &dst, maps = std::move(maps), weighted = std::move(weighted)] {
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      const std::size_t rank = dst.dims.size();
      const auto strides = rowMajorStrides(src.dims);
      std::vector<int64_t> index(rank, 0);
      const int64_t total = dst.count();
      std::size_t corners = 1;
      for (std::size_t a : weighted) corners *= static_cast<std::size_t>(maps[a].taps);
      for (int64_t o = 0; o < total; ++o) {
        if constexpr (std::is_floating_point_v<T>) {
          if (!weighted.empty()) {
            double sum = 0;
            for (std::size_t corner = 0; corner < corners; ++corner) {
              int64_t offset = 0;
              double w = 1.0;
              std::size_t rest = corner;
              for (std::size_t a = 0; a < rank; ++a) {
                const AxisMap& m = maps[a];
                std::size_t tap = 0;
                if (m.taps > 1) {
                  tap = rest % static_cast<std::size_t>(m.taps);
                  rest /= static_cast<std::size_t>(m.taps);
                }
                const auto k = static_cast<std::size_t>(index[a] * m.taps) + tap;
                offset += m.index[k] * strides[a];
                w *= m.weight[k];
              }
              sum += w * static_cast<double>(in[offset]);
            }
            out[o] = static_cast<T>(sum);
          }
        }
        if (weighted.empty()) {
          int64_t offset = 0;
          for (std::size_t a = 0; a < rank; ++a)
            offset += maps[a].index[static_cast<std::size_t>(index[a])] * strides[a];
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

}  // namespace

std::unique_ptr<Kernel> makeResize(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& dst = ctx.output("dst");
  Interpolation interpolation;
  interpolation.mode = ctx.op.string("mode") == "TL_LINEAR" ? Mode::Linear : Mode::Nearest;
  interpolation.clampLinear = true;
  std::vector<double> scales;
  for (std::size_t a = 0; a < src.dims.size() && a < dst.dims.size(); ++a) {
    scales.push_back(static_cast<double>(dst.dims[a]) / static_cast<double>(src.dims[a]));
  }
  return resizeKernel(ctx, interpolation, scales);
}

std::unique_ptr<Kernel> makeInterpolate(const BuildContext& ctx) {
  Interpolation interpolation;
  interpolation.mode = enumParam<Mode>(ctx.op, "mode", ir::kInterpolationModes);
  interpolation.coordinates = enumParam<Coordinates>(ctx.op, "coordinate_mode", ir::kCoordinateModes);
  interpolation.rounding = enumParam<Rounding>(ctx.op, "nearest_mode", ir::kNearestModes);
  interpolation.cubicA = ctx.op.number("cubic_coeff_a");
  interpolation.excludeOutside = ctx.op.boolean("exclude_outside");
  const auto scales = ctx.op.numbers("scales");
  if (scales.size() != ctx.input("src").dims.size()) throwKernelError(ctx.op, "param 'scales': one value per axis");
  return resizeKernel(ctx, interpolation, scales);
}

}  // namespace qaic::kernels::ops
