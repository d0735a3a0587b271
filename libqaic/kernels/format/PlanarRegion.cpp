// SPDX-License-Identifier: Apache-2.0
// Built with -mf16c -mavx2. The general tile: eight W positions of up to eight channel planes,
// transposed so that each pixel's channels form one vector. Handles any region and chunk size;
// the fast kernels use it for the edges their whole tiles do not cover.
#include "kernels/format/Avx2Common.hpp"
#include "kernels/format/PlanarKernels.hpp"

namespace qaic::kernels::format {
namespace {

template <bool kHalf, bool kToDevice>
void region(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin, int64_t wEnd) {
  using Io = DeviceIo<kHalf>;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const bool wMajor = job.layout == ir::DeviceLayout::DWHC;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  const int64_t chunk = a.channels;
  const int64_t line = (wMajor ? H : W) * chunk;  // elements in one column (DWHC) or row (DHWC)
  auto* device = reinterpret_cast<typename Io::Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t h = hBegin; h < hEnd; ++h) {
    for (int64_t w0 = wBegin; w0 < wEnd; w0 += 8) {
      const int64_t n = wEnd - w0 < 8 ? wEnd - w0 : 8;
      auto* pixel = device + h * a.hStride + w0 * a.wStride;
      // A whole vector per pixel while the surplus lanes stay inside the pixel's column / row:
      // stored surplus lands on pixels written later, loaded surplus is ignored.
      auto width = [&](int64_t j) {
        const int64_t inLine = wMajor ? h * chunk : (w0 + j) * chunk;
        return inLine + 8 <= line ? 8 : chunk;
      };
      __m256 r[8];
      if constexpr (kToDevice) {
        for (int64_t c = 0; c < 8; ++c) r[c] = c < chunk ? loadFloats(plane + (c * H + h) * W + w0, n) : zero;
        transpose8x8(r);  // r[j] = the chunk's channels at w0 + j
        for (int64_t j = 0; j < n; ++j) Io::store(pixel + j * a.wStride, r[j], width(j));
      } else {
        for (int64_t j = 0; j < 8; ++j) r[j] = j < n ? Io::load(pixel + j * a.wStride, width(j)) : zero;
        transpose8x8(r);  // r[c] = channel c at w0 .. w0 + 7
        for (int64_t c = 0; c < chunk; ++c) storeFloats(plane + (c * H + h) * W + w0, r[c], n);
      }
    }
  }
}

}  // namespace

void planarRegion(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin,
                  int64_t wEnd) {
  if (hBegin >= hEnd || wBegin >= wEnd) return;
  withJobKind(job, [&](auto half, auto toDevice) {
    region<half.value, toDevice.value>(job, d, c0, hBegin, hEnd, wBegin, wEnd);
  });
}

}  // namespace qaic::kernels::format
