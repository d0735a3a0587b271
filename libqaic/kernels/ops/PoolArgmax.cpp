// SPDX-License-Identifier: Apache-2.0
// pool_argmax (ONNX MaxPool's Indices output): for every window of the N-D pool, where its
// maximum is, as an index into the whole src tensor flattened (N and C included), row-major or,
// with column_major, with the spatial dims reversed (ONNX storage_order 1). Padded cells never
// take part. The first maximum in the window's row-major order wins, and a NaN wins over any
// number, as PyTorch's max_pool with return_indices decides.
#include <cmath>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Window.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makePoolArgmax(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  const NdWindow window = ndWindow(ctx.op);
  const bool columnMajor = ctx.op.boolean("column_major");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::UInt8, ir::DType::Int8});
  requireDTypes(ctx.op, "dst", dst.dtype, {ir::DType::Int64});
  const std::size_t spatial = window.kernel.size();
  if (src.dims.size() != spatial + 2 || dst.dims.size() != src.dims.size())
    throwKernelError(ctx.op, "src and dst must be [N, C, spatial...] with one window value per spatial dim");
  return makeKernel([&src, &dst, window, columnMajor, spatial] {
    // Strides of a spatial position in the src data (row-major) and in the reported index (the
    // same, or with the spatial dims reversed).
    const ir::Dims spatialDims(src.dims.begin() + 2, src.dims.end());
    const std::vector<int64_t> dataStride = rowMajorStrides(spatialDims);
    std::vector<int64_t> reportStride = dataStride;
    if (columnMajor) {
      const std::vector<int64_t> reversed = rowMajorStrides(ir::Dims(spatialDims.rbegin(), spatialDims.rend()));
      reportStride.assign(reversed.rbegin(), reversed.rend());
    }
    const int64_t plane = ir::elementCount(spatialDims);
    int64_t outPlane = 1, windowCells = 1;
    for (std::size_t d = 0; d < spatial; ++d) {
      outPlane *= dst.dims[2 + d];
      windowCells *= window.kernel[d];
    }
    const int64_t planes = src.dims[0] * src.dims[1];
    int64_t* out = dst.as<int64_t>();
    const auto scan = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      std::vector<int64_t> position(spatial), cell(spatial);
      for (int64_t p = 0; p < planes; ++p) {
        const T* data = in + p * plane;
        for (int64_t o = 0; o < outPlane; ++o) {
          for (int64_t rest = o, d = static_cast<int64_t>(spatial); d-- > 0;) {
            const auto ds = static_cast<std::size_t>(d);
            position[ds] = rest % dst.dims[2 + ds];
            rest /= dst.dims[2 + ds];
          }
          int64_t best = -1;
          T bestValue{};
          for (int64_t w = 0; w < windowCells; ++w) {
            int64_t at = 0, report = 0;
            bool inside = true;
            for (int64_t rest = w, d = static_cast<int64_t>(spatial); d-- > 0;) {
              const auto ds = static_cast<std::size_t>(d);
              const int64_t k = rest % window.kernel[ds];
              rest /= window.kernel[ds];
              cell[ds] = position[ds] * window.stride[ds] - window.padBegin[ds] + k * (window.dilation[ds] + 1);
              inside = inside && cell[ds] >= 0 && cell[ds] < src.dims[2 + ds];
              at += cell[ds] * dataStride[ds];
              report += cell[ds] * reportStride[ds];
            }
            if (!inside) continue;
            const T value = data[at];
            bool better = best < 0 || value > bestValue;
            if constexpr (std::is_floating_point_v<T>) better = better || (std::isnan(value) && !std::isnan(bestValue));
            if (better) {
              best = report;
              bestValue = value;
            }
          }
          // A window entirely in the padding (pads as large as the window) has no maximum: -1.
          out[p * outPlane + o] = best < 0 ? -1 : p * plane + best;
        }
      }
    };
    if (src.dtype == ir::DType::Float) scan(TypeTag<float>{});
    if (src.dtype == ir::DType::UInt8) scan(TypeTag<uint8_t>{});
    if (src.dtype == ir::DType::Int8) scan(TypeTag<int8_t>{});
  });
}

}  // namespace qaic::kernels::ops
