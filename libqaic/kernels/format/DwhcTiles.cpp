// SPDX-License-Identifier: Apache-2.0
// Built with -mf16c -mavx2. NCHW floats <-> DWHC, whole 8 x 8 pixel tiles.
//
// In DWHC a column w of a chunk of K channels holds H*K elements ordered (h, c). Eight rows
// h0..h0+7 therefore form 8K consecutive elements of each column; element e of that run is channel
// e % K of row h0 + e / K. Taking the user rows (plane e % K, row h0 + e / K) at w0..w0+7 for e =
// 8k..8k+7 as the rows of an 8x8 tile and transposing it gives, for each of the eight columns, the
// vector of elements 8k..8k+7. So every load and store is a whole vector and no lane is wasted,
// whatever K is. Rows and columns outside whole tiles go through planarRegion.
#include "kernels/format/Avx2Common.hpp"
#include "kernels/format/PlanarKernels.hpp"

#include <algorithm>

namespace qaic::kernels::format {
namespace {

template <bool kHalf, bool kToDevice, int kK>
void chunkTiles(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin,
                int64_t wEnd) {
  using Io = DeviceIo<kHalf>;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  auto* device = reinterpret_cast<typename Io::Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  int64_t rowOffset[8 * kK];  // user offset of tile row e, relative to (c0, h0, w0)
  tileRowOffsets(g, kK, 8 * kK, rowOffset);
  const int64_t column = a.wStride;  // H * kK
  // Tile group k at (h0, w0): the column elements 8k..8k+7 of rows h0..h0+7 in columns
  // w0..w0+7, whose user rows start at user + rowOffset[8k + s].
  auto group = [&](float* user, typename Io::Element* dev, int k) {
    __m256 r[8];
    if constexpr (kToDevice) {
      loadTransposed8x8([&](int s) { return user + rowOffset[8 * k + s]; }, r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) Io::store8(dev + j * column + 8 * k, r[j]);
    } else {
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) r[j] = Io::load8(dev + j * column + 8 * k);
      transpose8x8(r);  // measured: faster here than half-column loads (loadTransposed8x8)
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) _mm256_storeu_ps(user + rowOffset[8 * k + s], r[s]);
    }
  };
  // Float16 output, two side-by-side tiles: converted first and transposed as 16-bit elements,
  // one tile per 128-bit lane, which takes fewer shuffles per element than the float transpose.
  auto halfGroupPair = [&](const float* user, uint16_t* dev, int k) {
    __m256i x[8];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const float* row = user + rowOffset[8 * k + s];
      x[s] = _mm256_set_m128i(_mm256_cvtps_ph(_mm256_loadu_ps(row + 8), _MM_FROUND_TO_NEAREST_INT),
                              _mm256_cvtps_ph(_mm256_loadu_ps(row), _MM_FROUND_TO_NEAREST_INT));
    }
    transpose8x8Epi16(x);  // x[j] = column j (low lane) and 8 + j (high lane)
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      _mm256_storeu2_m128i(reinterpret_cast<__m128i*>(dev + (8 + j) * column + 8 * k),
                           reinterpret_cast<__m128i*>(dev + j * column + 8 * k), x[j]);
    }
  };
  // Measured (tests/bench/format/DeviceFormatBench.cpp): whole tiles, all groups at once, are
  // fastest for narrow chunks and for cached tensors read into the device format. A tile of a wide
  // chunk touches 8 * kK user rows at once, though: too many streams for the hardware prefetchers
  // when the tensor comes from DRAM, and too many partly written lines when writing user rows.
  // There one group (eight rows) crosses the whole band at a time.
  const bool fromDram = tensorFromDram(g);
  const bool groupMajor = kK > 4 && (fromDram || !kToDevice);
  // Narrow chunks read from DRAM into user rows: a band of eight rows reads only 32 * kK bytes
  // of each column before moving to the next column, W short streams far apart that the memory
  // system serves poorly. A tile column instead crosses many bands (up to 1024 user rows, whose
  // partly written lines stay in the L2 cache until the next tile column completes them), so
  // each column is read in runs of up to 4 KB. Measured: 128/3/224/224 from 0.47 to 0.57 of
  // memcpy; cached images are faster band by band.
  if (!kToDevice && kK <= 4 && fromDram) {
    const int64_t blockRows = std::min<int64_t>(hEnd - hBegin, 1024 / kK / 8 * 8);
    for (int64_t hb = hBegin; hb < hEnd; hb += blockRows) {
      const int64_t hbEnd = std::min(hEnd, hb + blockRows);
      for (int64_t w0 = wBegin; w0 < wEnd; w0 += 8) {
        for (int64_t h0 = hb; h0 < hbEnd; h0 += 8) {
#pragma GCC unroll 8
          for (int k = 0; k < kK; ++k) group(plane + h0 * W + w0, device + h0 * kK + w0 * column, k);
        }
      }
    }
    return;
  }
  for (int64_t h0 = hBegin; h0 < hEnd; h0 += 8) {
    float* user = plane + h0 * W;
    auto* dev = device + h0 * kK;
    if (groupMajor) {
      for (int k = 0; k < kK; ++k) {
        for (int64_t w0 = wBegin; w0 < wEnd; w0 += 8) group(user + w0, dev + w0 * column, k);
      }
      continue;
    }
    int64_t w0 = wBegin;
    if constexpr (kHalf && kToDevice && kK <= 4) {
      for (; w0 + 16 <= wEnd; w0 += 16) {
#pragma GCC unroll 8
        for (int k = 0; k < kK; ++k) halfGroupPair(user + w0, dev + w0 * column, k);
      }
    }
    for (; w0 < wEnd; w0 += 8) {
#pragma GCC unroll 8
      for (int k = 0; k < kK; ++k) group(user + w0, dev + w0 * column, k);
    }
  }
}

}  // namespace

void dwhcTileRegion(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin,
                    int64_t wEnd) {
  if (hBegin >= hEnd || wBegin >= wEnd) return;
  const int64_t chunk = std::min<int64_t>(8, job.geometry.channels - c0);
  withJobKind(job, [&](auto half, auto toDevice) {
    withChannelCount(chunk, [&](auto k) {
      chunkTiles<half.value, toDevice.value, k.value>(job, d, c0, hBegin, hEnd, wBegin, wEnd);
    });
  });
}

void dwhcTiles(const PlanarJob& job) {
  const DeviceGeometry& g = job.geometry;
  const int64_t hTiled = g.height / 8 * 8, wTiled = g.width / 8 * 8;
  forEachChunk(g, [&](int64_t d, int64_t c0, int64_t) {
    dwhcTileRegion(job, d, c0, 0, hTiled, 0, wTiled);
    // The edges: the last H % 8 rows of the tiled columns, then the last W % 8 columns whole.
    planarRegion(job, d, c0, hTiled, g.height, 0, wTiled);
    planarRegion(job, d, c0, 0, g.height, wTiled, g.width);
  });
}

}  // namespace qaic::kernels::format
