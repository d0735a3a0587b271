// SPDX-License-Identifier: Apache-2.0
// grid_sample (ONNX GridSample, PyTorch's grid_sample): every output point reads src at the
// position the grid gives it, normalized to [-1, 1] per spatial axis, grid[..., 0] along the
// last axis (x, the width), grid[..., 1] the one before it, and so on.
//
// Following PyTorch's sampler, which the ONNX operator was written from: a coordinate maps to
// x = (g + 1) / 2 * (L - 1) with align_corners, else ((g + 1) * L - 1) / 2. Nearest and linear
// pad the coordinate (border clamps it, reflection folds it back, then clamps) and take their
// cells around it; cubic takes its 4 x 4 cells around the unpadded coordinate and pads each
// cell's index instead. A cell outside src contributes nothing (zeros padding), and it is
// skipped rather than weighed by 0, so an inf or NaN there does not leak into the result.
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
enum class Padding { Zeros, Border, Reflection };

constexpr double kCubicA = -0.75;  // PyTorch's bicubic
// Beyond this a coordinate is outside any tensor and must not reach an integer conversion.
constexpr double kCoordinateLimit = 1e15;
constexpr int64_t kSkip = -1;

struct Sampling {
  Mode mode = Mode::Linear;
  Padding padding = Padding::Zeros;
  bool alignCorners = false;
};

// The cells one axis contributes to one point: indices (kSkip outside src) and weights.
struct AxisCells {
  int count = 0;
  std::array<int64_t, 4> index{};
  std::array<double, 4> weight{};
};

// Folds x into [low, high] (given doubled, as integers where the bounds are half cells) by
// reflecting it at the bounds as often as needed.
double reflect(double x, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh) return 0;
  const double low = twiceLow / 2;
  const double span = (twiceHigh - twiceLow) / 2;
  const double distance = std::fabs(x - low);
  const double extra = std::fmod(distance, span);
  const bool even = std::fmod(std::floor(distance / span), 2.0) == 0;
  return even ? extra + low : span - extra + low;
}

double padCoordinate(const Sampling& s, double x, int64_t extent) {
  const double last = static_cast<double>(extent - 1);
  switch (s.padding) {
    case Padding::Zeros: return x;
    case Padding::Border: return std::clamp(x, 0.0, last);
    case Padding::Reflection: {
      const double twice = static_cast<double>(extent);
      x = s.alignCorners ? reflect(x, 0, 2 * last) : reflect(x, -1, 2 * twice - 1);
      return std::clamp(x, 0.0, last);
    }
  }
  return x;
}

int64_t cellOrSkip(double x, int64_t extent) {
  const auto i = static_cast<int64_t>(x);
  return i >= 0 && i < extent ? i : kSkip;
}

AxisCells axisCells(const Sampling& s, double g, int64_t extent) {
  AxisCells cells;
  const double length = static_cast<double>(extent);
  double x = s.alignCorners ? (g + 1) / 2 * (length - 1) : ((g + 1) * length - 1) / 2;
  if (s.mode != Mode::Cubic) x = padCoordinate(s, x, extent);
  if (!(std::fabs(x) < kCoordinateLimit)) {  // also NaN
    cells.count = 1;
    cells.index[0] = kSkip;
    return cells;
  }
  if (s.mode == Mode::Nearest) {
    cells.count = 1;
    cells.index[0] = cellOrSkip(std::nearbyint(x), extent);  // halves to even, as PyTorch rounds
    cells.weight[0] = 1;
    return cells;
  }
  const double base = std::floor(x);
  const double r = x - base;
  if (s.mode == Mode::Linear) {
    cells.count = 2;
    cells.index = {cellOrSkip(base, extent), cellOrSkip(base + 1, extent), 0, 0};
    cells.weight = {1 - r, r, 0, 0};
    return cells;
  }
  cells.count = 4;
  cells.weight = cubicWeights(r, kCubicA);
  for (int t = 0; t < 4; ++t) {
    const double cell = padCoordinate(s, base - 1 + t, extent);
    cells.index[static_cast<std::size_t>(t)] = cellOrSkip(cell, extent);
  }
  return cells;
}

// At most 4 x 4 cells (cubic, two axes) or 2 x 2 x 2 (linear, three axes) per point.
struct PointCells {
  int count = 0;
  std::array<int64_t, 16> offset{};
  std::array<double, 16> weight{};
};

PointCells pointCells(const Sampling& s, const double* grid, const ir::Dims& srcDims) {
  const std::size_t spatial = srcDims.size() - 2;
  PointCells point;
  point.count = 1;
  point.offset[0] = 0;
  point.weight[0] = 1;
  // Axis a of src (a = 0 the outermost spatial axis) is grid component spatial - 1 - a.
  for (std::size_t a = 0; a < spatial; ++a) {
    const int64_t extent = srcDims[2 + a];
    const AxisCells cells = axisCells(s, grid[spatial - 1 - a], extent);
    PointCells next;
    for (int p = 0; p < point.count; ++p) {
      for (int c = 0; c < cells.count; ++c) {
        const auto ps = static_cast<std::size_t>(p);
        const auto cs = static_cast<std::size_t>(c);
        const bool skip = point.offset[ps] == kSkip || cells.index[cs] == kSkip;
        const auto n = static_cast<std::size_t>(next.count++);
        next.offset[n] = skip ? kSkip : point.offset[ps] * extent + cells.index[cs];
        next.weight[n] = point.weight[ps] * cells.weight[cs];
      }
    }
    point = next;
  }
  return point;
}

}  // namespace

std::unique_ptr<Kernel> makeGridSample(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& grid = ctx.input("grid");
  Tensor& dst = ctx.output("dst");
  Sampling sampling;
  sampling.mode = enumParam<Mode>(ctx.op, "mode", ir::kInterpolationModes);
  sampling.padding = enumParam<Padding>(ctx.op, "padding_mode", ir::kGridPaddingModes);
  sampling.alignCorners = ctx.op.boolean("align_corners");
  if (src.dims.size() < 3 || src.dims.size() > 5 || grid.dims.size() != src.dims.size() || dst.dtype != src.dtype)
    throwKernelError(ctx.op, "src, grid and dst do not fit");
  if (sampling.mode != Mode::Nearest) requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  requireDTypes(ctx.op, "grid", grid.dtype, {ir::DType::Float, ir::DType::Double});
  return makeKernel([&src, &grid, &dst, sampling] {
    const std::size_t spatial = src.dims.size() - 2;
    const int64_t batch = src.dims[0];
    const int64_t channels = src.dims[1];
    const int64_t plane = src.count() / (batch * channels);  // IR dims are >= 1
    const int64_t points = dst.count() / (batch * channels);
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      std::array<double, 3> coordinates{};
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t p = 0; p < points; ++p) {
          const int64_t at = (n * points + p) * static_cast<int64_t>(spatial);
          for (std::size_t i = 0; i < spatial; ++i) {
            coordinates[i] = grid.dtype == ir::DType::Double ? grid.as<double>()[at + static_cast<int64_t>(i)]
                                                             : grid.as<float>()[at + static_cast<int64_t>(i)];
          }
          const PointCells cells = pointCells(sampling, coordinates.data(), src.dims);
          for (int64_t c = 0; c < channels; ++c) {
            const T* from = in + (n * channels + c) * plane;
            T& to = out[(n * channels + c) * points + p];
            if constexpr (std::is_floating_point_v<T>) {
              double sum = 0;
              for (int k = 0; k < cells.count; ++k) {
                const auto ks = static_cast<std::size_t>(k);
                if (cells.offset[ks] != kSkip) sum += cells.weight[ks] * static_cast<double>(from[cells.offset[ks]]);
              }
              to = static_cast<T>(sum);
            } else {  // nearest: one cell, copied
              to = cells.offset[0] == kSkip ? T{} : from[cells.offset[0]];
            }
          }
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
