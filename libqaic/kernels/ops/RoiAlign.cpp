// SPDX-License-Identifier: Apache-2.0
// roi_align (ONNX RoiAlign, torchvision.ops.roi_align): each region of interest [x1, y1, x2, y2]
// of image batch_indices[r], scaled by spatial_scale, is cut into output_dims bins; each bin is
// the average (or maximum) of a grid of bilinear samples, sampling_ratio per bin side, or
// ceil(region side / bins) when it is 0.
//
// Following the reference the operator was written from (Caffe2's, which torchvision and ONNX
// Runtime share): with half_pixel the region is shifted by half a cell and may be smaller than
// one cell; without it a region side is at least one cell. A sample more than one cell outside
// the image counts as 0; others are clamped to the image. Max mode takes, per sample, the largest
// of the four weighted cells, as that reference does.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "ir/OpRegistry.hpp"
#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

enum class Mode { Max, Average };

struct Settings {
  Mode mode = Mode::Average;
  int64_t outHeight = 1, outWidth = 1;
  int64_t samplingRatio = 0;
  double spatialScale = 1;
  bool halfPixel = true;
};

// The four cells of one bilinear sample and their weights; `inside` false reads nothing.
struct Sample {
  bool inside = false;
  std::array<int64_t, 4> offset{};
  std::array<double, 4> weight{};
};

constexpr double kMaxGridSide = 1 << 20;

// The sample indices [first, last) of one bin's axis whose coordinates base + (i + 0.5) * step
// may lie in [-1, extent] (one index of slack each side; bilinearSample decides exactly).
std::pair<int64_t, int64_t> nearImage(double base, double step, int64_t grid, int64_t extent) {
  if (grid <= 0) return {0, 0};
  if (step == 0 || !std::isfinite(step)) return {0, grid};
  double a = (-1.0 - base) / step - 0.5, b = (static_cast<double>(extent) - base) / step - 0.5;
  if (a > b) std::swap(a, b);
  if (!(b >= -1) || !(a <= static_cast<double>(grid))) return {0, 0};  // also NaN
  const double first = std::max(std::floor(a) - 1, 0.0);
  const double last = std::min(std::ceil(b) + 2, static_cast<double>(grid));
  return {static_cast<int64_t>(first), static_cast<int64_t>(std::max(first, last))};
}

Sample bilinearSample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (!(y >= -1.0 && y <= static_cast<double>(height) && x >= -1.0 && x <= static_cast<double>(width))) return s;
  s.inside = true;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto low = [](double v, int64_t extent, int64_t& lo, int64_t& hi) {
    lo = static_cast<int64_t>(v);
    if (lo >= extent - 1) {
      lo = hi = extent - 1;
      return 0.0;
    }
    hi = lo + 1;
    return v - static_cast<double>(lo);
  };
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  const double ly = low(y, height, y0, y1), lx = low(x, width, x0, x1);
  const double hy = 1 - ly, hx = 1 - lx;
  s.offset = {y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1};
  s.weight = {hy * hx, hy * lx, ly * hx, ly * lx};
  return s;
}

}  // namespace

std::unique_ptr<Kernel> makeRoiAlign(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& rois = ctx.input("rois");
  const Tensor& batchIndices = ctx.input("batch_indices");
  Tensor& dst = ctx.output("dst");
  Settings settings;
  settings.mode = enumParam<Mode>(ctx.op, "mode", ir::kPoolOps);
  const auto outputDims = ctx.op.integers("output_dims");
  if (outputDims.size() != 2) throwKernelError(ctx.op, "output_dims must be [height, width]");
  settings.outHeight = outputDims[0];
  settings.outWidth = outputDims[1];
  settings.samplingRatio = ctx.op.integer("sampling_ratio");
  settings.spatialScale = ctx.op.number("spatial_scale");
  settings.halfPixel = ctx.op.boolean("half_pixel");
  if (src.dims.size() != 4 || rois.dims.size() != 2 || dst.dtype != src.dtype || rois.dtype != src.dtype)
    throwKernelError(ctx.op, "src, rois and dst do not fit");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Double});
  requireDTypes(ctx.op, "batch_indices", batchIndices.dtype, {ir::DType::Int64, ir::DType::Int32});
  return makeKernel([&src, &rois, &batchIndices, &dst, &op = ctx.op, settings] {
    const int64_t images = src.dims[0], channels = src.dims[1], height = src.dims[2], width = src.dims[3];
    const int64_t regions = rois.dims[0];
    const int64_t bins = settings.outHeight * settings.outWidth;
    visitDType(src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = src.as<T>();
        const T* box = rois.as<T>();
        T* out = dst.as<T>();
        std::vector<Sample> samples;
        std::vector<int64_t> firstSample(static_cast<std::size_t>(bins + 1));
        for (int64_t r = 0; r < regions; ++r) {
          const int64_t image = batchIndices.dtype == ir::DType::Int64 ? batchIndices.as<int64_t>()[r]
                                                                       : batchIndices.as<int32_t>()[r];
          if (image < 0 || image >= images) {
            throwKernelError(op, "batch_indices[" + std::to_string(r) + "] is " + std::to_string(image) +
                                     ", outside the " + std::to_string(images) + " images of src");
          }
          const double offset = settings.halfPixel ? 0.5 : 0.0;
          const double startX = static_cast<double>(box[r * 4 + 0]) * settings.spatialScale - offset;
          const double startY = static_cast<double>(box[r * 4 + 1]) * settings.spatialScale - offset;
          double regionWidth = static_cast<double>(box[r * 4 + 2]) * settings.spatialScale - offset - startX;
          double regionHeight = static_cast<double>(box[r * 4 + 3]) * settings.spatialScale - offset - startY;
          if (!settings.halfPixel) {
            regionWidth = std::max(regionWidth, 1.0);
            regionHeight = std::max(regionHeight, 1.0);
          }
          const double binHeight = regionHeight / static_cast<double>(settings.outHeight);
          const double binWidth = regionWidth / static_cast<double>(settings.outWidth);
          // A NaN region samples nothing; a huge one is capped far beyond any image.
          const auto gridSide = [&](double side, int64_t outputs) -> int64_t {
            if (settings.samplingRatio > 0) return settings.samplingRatio;
            const double n = std::ceil(side / static_cast<double>(outputs));
            return std::isfinite(n) && n > 0 ? static_cast<int64_t>(std::min(n, kMaxGridSide)) : 0;
          };
          const int64_t gridHeight = gridSide(regionHeight, settings.outHeight);
          const int64_t gridWidth = gridSide(regionWidth, settings.outWidth);
          const double count = static_cast<double>(std::max<int64_t>(gridHeight * gridWidth, 1));
          samples.clear();
          for (int64_t b = 0; b < bins; ++b) {
            firstSample[static_cast<std::size_t>(b)] = static_cast<int64_t>(samples.size());
            const int64_t py = b / settings.outWidth, px = b % settings.outWidth;
            const double baseY = startY + static_cast<double>(py) * binHeight;
            const double baseX = startX + static_cast<double>(px) * binWidth;
            const double stepY = binHeight / static_cast<double>(gridHeight);
            const double stepX = binWidth / static_cast<double>(gridWidth);
            // Only the samples near the image are visited: a region far larger than the image
            // costs what the image does. The others count as zeros.
            const auto [y0, y1] = nearImage(baseY, stepY, gridHeight, height);
            const auto [x0, x1] = nearImage(baseX, stepX, gridWidth, width);
            for (int64_t iy = y0; iy < y1; ++iy) {
              const double y = baseY + (static_cast<double>(iy) + 0.5) * stepY;
              for (int64_t ix = x0; ix < x1; ++ix) {
                const Sample sample = bilinearSample(y, baseX + (static_cast<double>(ix) + 0.5) * stepX, height, width);
                if (sample.inside) samples.push_back(sample);
              }
            }
          }
          firstSample[static_cast<std::size_t>(bins)] = static_cast<int64_t>(samples.size());
          for (int64_t c = 0; c < channels; ++c) {
            const T* plane = in + (image * channels + c) * height * width;
            T* to = out + (r * channels + c) * bins;
            for (int64_t b = 0; b < bins; ++b) {
              const int64_t from = firstSample[static_cast<std::size_t>(b)];
              const int64_t end = firstSample[static_cast<std::size_t>(b + 1)];
              // Samples outside the image weigh nothing: in max mode they are candidates of 0.
              const bool someOutside = static_cast<double>(end - from) < count;
              double value = 0;
              bool first = !someOutside;
              for (int64_t k = from; k < end; ++k) {
                const Sample& s = samples[static_cast<std::size_t>(k)];
                std::array<double, 4> terms{};
                for (std::size_t j = 0; j < 4; ++j) terms[j] = s.weight[j] * static_cast<double>(plane[s.offset[j]]);
                if (settings.mode == Mode::Average) {
                  value += terms[0] + terms[1] + terms[2] + terms[3];
                } else {
                  const double largest = std::max(std::max(terms[0], terms[1]), std::max(terms[2], terms[3]));
                  value = first ? largest : std::max(value, largest);
                  first = false;
                }
              }
              to[b] = static_cast<T>(settings.mode == Mode::Average ? value / count : value);
            }
          }
        }
      }
    });
  });
}

}  // namespace qaic::kernels::ops
