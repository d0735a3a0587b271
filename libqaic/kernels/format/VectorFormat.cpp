// SPDX-License-Identifier: Apache-2.0
// Built with -mf16c -mavx2 (see CMakeLists.txt); nothing here runs unless cpuHasF16cAvx2().
// Covered: user float <-> device float16 / float, every layout. Picks the kernel for a layout
// pair; the same-order and NHWC cases are simple enough to live here, NCHW against a chunked
// layout has its own files (PlanarKernels.hpp).
#include "kernels/format/VectorFormat.hpp"
#include "kernels/format/Avx2Common.hpp"
#include "kernels/format/DwhcTilesAvx512.hpp"
#include "kernels/format/PlanarKernels.hpp"

#include <cstring>

namespace qaic::kernels::format {
namespace {

using ir::DeviceLayout;
using ir::DType;
using ir::UserLayout;

template <bool kHalf, bool kToDevice>
void contiguous(const DeviceGeometry& g, float* user, typename DeviceIo<kHalf>::Element* device) {
  const int64_t total = g.depth * g.channels * g.height * g.width;
  if constexpr (!kHalf) {
    // The same bytes in the same order: the C library's copy (wide stores, non-temporal ones
    // for large buffers) beats any loop of ours.
    if constexpr (kToDevice) {
      std::memcpy(device, user, static_cast<std::size_t>(total) * sizeof(float));
    } else {
      std::memcpy(user, device, static_cast<std::size_t>(total) * sizeof(float));
    }
    return;
  }
  int64_t i = 0;
  for (; i < total; i += 8) {
    const int64_t n = total - i < 8 ? total - i : 8;
    if constexpr (kToDevice) {
      DeviceIo<kHalf>::store(device + i, loadFloats(user + i, n), n);
    } else {
      storeFloats(user + i, DeviceIo<kHalf>::load(device + i, n), n);
    }
  }
}

// Whether the AVX-512 tiles beat the AVX2 ones on this job. Measured (device-format.md, A/B of
// the forced paths in the same runs): reading DWHC into user rows when H and W are multiples of
// the 16-pixel tile (postprocess 1/8/112/112 +0.03 to +0.18 of memcpy, 64/8/112/112 and
// 32/3/224/224 about +0.05, 1/3/224/224 and 128/3/224/224 equal). With H and W multiples of 8
// but not both of 16, the AVX-512 kernel runs pairs of 8 x 8 tiles per vector (wideTiles) on
// cached tensors in both directions: 1/20/56/56 postprocess 57-59 -> 62-63 GB/s, preprocess
// 51-52 -> 57 GB/s. Slower elsewhere: 16 x 16 tiles into the device format (narrow chunks from
// DRAM 0.72 -> 0.37) and with masked edge tiles (1/20/56/56 0.43 -> 0.38). Cached tensors take
// wideTiles into the device format also when H and W are multiples of 16: preprocess
// 1/8/112/112 54-56 -> 71 GB/s. Chunks of 3 (1/3/224/224) kept the AVX2 kernel before
// wideTiles swept (54-60 against 59-60 GB/s); swept, wideTiles ran at 69.9-78.4 against
// 63.8-68.8 GB/s in four same-run pairs on an AMD EPYC (Zen 5), so every chunk width of a cached
// tensor takes it now. Tensors from DRAM keep the AVX2 kernel into the device format (the
// 16 x 16 tiles there: 32/3/224/224 0.60 -> 0.33 of memcpy).
bool avx512Faster(const PlanarJob& job) {
  const DeviceGeometry& g = job.geometry;
  const bool eightAligned = g.height % 8 == 0 && g.width % 8 == 0;
  if (!job.toDevice) return eightAligned;
  return eightAligned && !tensorFromDram(g);
}

// User NCHW against a chunked layout.
void planar(const PlanarJob& job, VectorKernels kernels) {
  const DeviceGeometry& g = job.geometry;
  // One row (H == 1) is ordered the same way in DWHC and DHWC: the row kernel handles both.
  if (job.layout == DeviceLayout::DHWC || g.height == 1) return dhwcRows(job);
  if (kernels == VectorKernels::Avx512 || (kernels == VectorKernels::Best && avx512Faster(job))) {
    return dwhcTilesAvx512(job);
  }
  if (g.height >= 8) return dwhcTiles(job);
  forEachChunk(g, [&](int64_t d, int64_t c0, int64_t) { planarRegion(job, d, c0, 0, g.height, 0, g.width); });
}

// User NHWC against a chunked layout: each pixel's chunk of channels is contiguous on both sides.
template <bool kHalf, bool kToDevice>
void interleaved(const DeviceGeometry& g, DeviceLayout layout, float* user, typename DeviceIo<kHalf>::Element* device) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  forEachChunk(g, [&](int64_t d, int64_t c0, int64_t chunk) {
    const ChunkAddress a = chunkAddress(g, layout, d, c0);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t w = 0; w < W; ++w) {
        float* u = user + ((d * H + h) * W + w) * C + c0;
        auto* p = device + a.base + h * a.hStride + w * a.wStride;
        if constexpr (kToDevice) {
          DeviceIo<kHalf>::store(p, loadFloats(u, chunk), chunk);
        } else {
          storeFloats(u, DeviceIo<kHalf>::load(p, chunk), chunk);
        }
      }
    }
  });
}

template <bool kHalf, bool kToDevice>
bool convert(const DeviceGeometry& g, DeviceLayout layout, UserLayout userLayout, float* user, void* deviceBytes,
             VectorKernels kernels) {
  auto* device = static_cast<typename DeviceIo<kHalf>::Element*>(deviceBytes);
  const bool sameOrder = (layout == DeviceLayout::Flat && userLayout == UserLayout::NCHW) ||
                         (layout == DeviceLayout::DHWC && userLayout == UserLayout::NHWC && g.channels <= 8);
  if (sameOrder) {
    contiguous<kHalf, kToDevice>(g, user, device);
  } else if (layout == DeviceLayout::Flat) {
    return false;  // NHWC user buffer into a flat NCHW tensor: the scalar walk handles it
  } else if (userLayout == UserLayout::NCHW) {
    planar(PlanarJob{g, layout, user, reinterpret_cast<std::byte*>(device), kHalf, kToDevice}, kernels);
  } else {
    interleaved<kHalf, kToDevice>(g, layout, user, device);
  }
  return true;
}

}  // namespace

bool userToDeviceVector(const DeviceGeometry& g, DeviceLayout layout, UserLayout userLayout, DType userType,
                        const std::byte* user, DType deviceType, std::byte* device, VectorKernels kernels) {
  if (userType != DType::Float) return false;
  // The user side is only read; the shared helpers take a mutable pointer for both directions.
  float* in = const_cast<float*>(reinterpret_cast<const float*>(user));
  if (deviceType == DType::Float16) return convert<true, true>(g, layout, userLayout, in, device, kernels);
  if (deviceType == DType::Float) return convert<false, true>(g, layout, userLayout, in, device, kernels);
  return false;
}

bool deviceToUserVector(const DeviceGeometry& g, DeviceLayout layout, DType deviceType, const std::byte* device,
                        UserLayout userLayout, DType userType, std::byte* user, VectorKernels kernels) {
  if (userType != DType::Float) return false;
  float* out = reinterpret_cast<float*>(user);
  void* in = const_cast<std::byte*>(device);
  if (deviceType == DType::Float16) return convert<true, false>(g, layout, userLayout, out, in, kernels);
  if (deviceType == DType::Float) return convert<false, false>(g, layout, userLayout, out, in, kernels);
  return false;
}

}  // namespace qaic::kernels::format
