// SPDX-License-Identifier: Apache-2.0
// Built with the AVX-512 flags (Avx512Common.hpp); nothing here runs unless cpuHasAvx512().
// Cached DWHC tensors read into NCHW float user rows by sweeps: each step of a kernel reads one
// row of tiles across all the columns of the chunk (or of a block of up to kMaxUnrolledSteps
// tiles), and the steps are unrolled across that width. Every load and store instruction then
// keeps one stride from one step to the next: the load of tile t's column j always advances 64
// bytes down that column, the store of its user row s always the same number of rows. Looping
// over the tiles of a row instead, one instruction visits every column in turn.
//
// Measured on an AMD EPYC (Zen 5, 1 MB L2), old and new bench_device_format alternating, GB/s
// (device-format.md, "Sweeps across the width"): postprocess 1/8/112/112 47-49 -> 58-65 (memcpy
// 98-110), 1/20/56/56 40-52 -> 57-60, 1/3/224/224 32-41 -> 45-47. In a harness, the same loads
// and stores without the transposes ran at 46-53 GB/s in every looped order (tile by tile, tile
// columns, row pairs) and at 65-70 with the row's tiles unrolled, while loads alone and stores
// alone ran at 75-165 in all of them. There were no performance counters to say why; the
// per-instruction stride prefetcher, which can follow an instruction only while its stride
// repeats, is the likely reason. Software prefetches of the same lines did not help.
#include "kernels/format/DwhcSweepsAvx512.hpp"

#include "kernels/format/Avx512Common.hpp"

namespace qaic::kernels::format {
namespace {

// kTiles whole 16 x 16 tiles side by side (columns of the block starting at `device` and `user`),
// all rows of whole bands: step (band b, tile row k) reads elements 16k..16k+15 of the band in
// every column of the block (DwhcTilesAvx512.cpp's tiles, transposed the same way) and writes
// user rows plane + rows[16k + s]. One pointer walks the block's columns: tile t + 1 starts
// where tile t's sixteenth column ends.
template <bool kHalf, int kTiles>
void sweepTiles(const typename DeviceIo16<kHalf>::Element* device, float* user, const int64_t* rows, int64_t K,
                int64_t column, int64_t W, int64_t bands) {
  using Io = DeviceIo16<kHalf>;
  for (int64_t b = 0; b < bands; ++b) {
    const auto* band = device + b * 16 * K;
    float* bandRows = user + b * 16 * W;
#pragma GCC unroll 1
    for (int64_t k = 0; k < K; ++k) {
      const auto* next = band + 16 * k;
      const int64_t* r = rows + 16 * k;
#pragma GCC unroll 8
      for (int t = 0; t < kTiles; ++t) {
        float* segments = bandRows + 16 * t;
        transposeTile(
            [&](int) __attribute__((always_inline)) {
              const __m512 v = Io::load(next);
              next = stepped(next, column);
              return v;
            },
            [&](int s, __m512 v) __attribute__((always_inline)) { _mm512_storeu_ps(segments + r[s], v); });
      }
    }
  }
}

// Device into user rows as whole cache lines, for W = 16n + 8 (n >= 1), H even and planes
// starting on a line (H * W * 4 is then a multiple of 64): each plane is a sequence of 64-byte
// lines, and in each pair of rows the even row starts a line and the odd row starts half way
// through one. wideTiles writes 16-pixel row segments, so every odd row's stores cross a line;
// here every line is one aligned 64-byte store. Chunks of 8 channels: a line is 16 consecutive
// pixels of a plane, two runs of eight columns of one row each (the line across the two rows:
// the even row's last eight columns, then the odd row's first eight), and the transpose of their
// 16 device runs (wideTiles' pair with its halves from the two runs) is that line of all eight
// planes. Even and odd lines alternate, so that the odd row reads the device lines the even row
// has just brought in (63-64 against 58-60 GB/s with all even lines first, in a harness).
// Postprocess 1/20/56/56 into a user buffer on a line: 55-56 -> 60-61 GB/s (device-format.md).
// kN = n unrolls the row pair (a sweep, see the top of this file), kN = 0 loops over it.
template <bool kHalf, int kN>
void rowPairLines8(const PlanarJob& job, int64_t d, int64_t c0) {
  using Element = typename DeviceIo<kHalf>::Element;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width, plane = H * W;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  const auto* device = reinterpret_cast<const Element*>(job.device) + a.base;
  float* const user = job.user + (d * C + c0) * plane;
  const int64_t column = a.wStride, wPairs = W - 8;
  auto line = [&](const Element* lo, const Element* hi, float* out) __attribute__((always_inline)) {
    __m512 r[8];
    transposeRunPairs<kHalf>(lo, hi, column, r);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      _mm512_storeu_ps(out, r[c]);
      out = stepped(out, plane);
    }
  };
  // Device pointers walk the columns (see wideTiles in DwhcTilesAvx512.cpp: hoisted multiples of
  // the column stride end up on the stack).
  const int64_t halfway = 8 * column, pairStride = 16 * column, lastEight = wPairs * column;
  for (int64_t h = 0; h < H; h += 2) {
    const Element* even = device + h * 8;  // the runs of row h
    const Element* odd = even + 8;
    float* rows = user + h * W;  // row h of the chunk's first plane
    float* oddRows = rows + W;
    line(even, stepped(even, halfway), rows);
    line(stepped(even, lastEight), odd, rows + wPairs);
    const Element* evenPair = stepped(even, pairStride);  // columns 16 and 24 of row h
    const Element* oddPair = stepped(odd, halfway);       // columns 8 and 16 of row h + 1
    auto twoLines = [&](int64_t w0) __attribute__((always_inline)) {
      line(evenPair, stepped(evenPair, halfway), rows + w0);
      line(oddPair, stepped(oddPair, halfway), oddRows + w0 - 8);
      evenPair = stepped(evenPair, pairStride);
      oddPair = stepped(oddPair, pairStride);
    };
    if constexpr (kN > 0) {
#pragma GCC unroll 8
      for (int i = 1; i < kN; ++i) twoLines(16 * i);
    } else {
      for (int64_t w0 = 16; w0 < wPairs; w0 += 16) twoLines(w0);
    }
    line(oddPair, stepped(oddPair, halfway), oddRows + wPairs - 8);
  }
}

// The same for chunks of 4 channels. One device run holds both rows, so each of wideTiles' pairs
// gives the even row's line and two half lines of the odd row, which are joined with the
// neighbouring pair's (`carry`); the line across the two rows joins the even row's last eight
// columns with the odd row's first eight. Output e of a pair is channel e % 4 of row h + e / 4.
template <bool kHalf, int kN>
void rowPairLines4(const PlanarJob& job, int64_t d, int64_t c0) {
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width, plane = H * W;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  const auto* device = reinterpret_cast<const typename DeviceIo<kHalf>::Element*>(job.device) + a.base;
  float* const user = job.user + (d * C + c0) * plane;
  const int64_t column = a.wStride, wPairs = W - 8;
  const int64_t halfway = 8 * column, pairStride = 16 * column, lastEight = wPairs * column;
  for (int64_t h = 0; h < H; h += 2) {
    const auto* runs = device + h * 4;  // rows h and h + 1
    float* rows = user + h * W;         // row h of the chunk's first plane
    __m256 tail[8];                     // output e at W - 8..W - 1
    const auto* tailRun = stepped(runs, lastEight);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      tail[j] = DeviceIo<kHalf>::load8(tailRun);
      tailRun = stepped(tailRun, column);
    }
    transpose8x8(tail);
    __m512 carry[4];              // the odd row's last pair, whose upper half starts the next line
    const auto* pairRuns = runs;  // walks the columns (as in rowPairLines8)
    auto pair = [&](int64_t w0) __attribute__((always_inline)) {
      __m512 r[8];
      transposeRunPairs<kHalf>(pairRuns, stepped(pairRuns, halfway), column, r);
      pairRuns = stepped(pairRuns, pairStride);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        _mm512_storeu_ps(rows + c * plane + w0, r[c]);
        if (w0 == 0) {
          _mm512_storeu_ps(rows + c * plane + wPairs,
                           _mm512_insertf32x8(_mm512_castps256_ps512(tail[c]), _mm512_castps512_ps256(r[4 + c]), 1));
        } else {
          // carry's lanes 2 and 3, then r's lanes 0 and 1
          _mm512_storeu_ps(rows + c * plane + W + w0 - 8, _mm512_shuffle_f32x4(carry[c], r[4 + c], 0x4E));
        }
        carry[c] = r[4 + c];
      }
    };
    if constexpr (kN > 0) {
#pragma GCC unroll 8
      for (int i = 0; i < kN; ++i) pair(16 * i);
    } else {
      for (int64_t w0 = 0; w0 < wPairs; w0 += 16) pair(w0);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      _mm512_storeu_ps(rows + c * plane + W + wPairs - 8,
                       _mm512_shuffle_f32x4(carry[c], _mm512_castps256_ps512(tail[4 + c]), 0x4E));
    }
  }
}

// The chunk's whole tiles in blocks of at most kMaxUnrolledSteps tile columns, the tiles shared
// out evenly (W = 224: two blocks of 7).
template <bool kHalf>
void wholeTilesBySweeps(const PlanarJob& job, int64_t d, int64_t c0) {
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  const int64_t K = a.channels, column = a.wStride;
  const auto* device = reinterpret_cast<const typename DeviceIo16<kHalf>::Element*>(job.device) + a.base;
  float* const plane = job.user + (d * C + c0) * H * W;
  int64_t rows[16 * 8];  // user offset of tile row e, relative to (c0, h0, w0)
  tileRowOffsets(g, K, 16 * K, rows);
  const int64_t tiles = W / 16, blocks = (tiles + kMaxUnrolledSteps - 1) / kMaxUnrolledSteps;
  int64_t t0 = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t n = (tiles - t0) / (blocks - b);
    withUnrolledSteps(n, [&](auto steps) {
      if constexpr (steps.value > 0) {
        sweepTiles<kHalf, steps.value>(device + 16 * t0 * column, plane + 16 * t0, rows, K, column, W, H / 16);
      }
    });
    t0 += n;
  }
}

}  // namespace

void sweepWholeTiles(const PlanarJob& job, int64_t d, int64_t c0) {
  job.half ? wholeTilesBySweeps<true>(job, d, c0) : wholeTilesBySweeps<false>(job, d, c0);
}

bool rowPairLinesApply(const PlanarJob& job) {
  const DeviceGeometry& g = job.geometry;
  return g.width % 16 == 8 && g.width >= 24 && g.height % 2 == 0 && reinterpret_cast<uintptr_t>(job.user) % 64 == 0;
}

void rowPairLines(const PlanarJob& job, int64_t d, int64_t c0) {
  const int64_t chunk = chunkAddress(job.geometry, job.layout, d, c0).channels;
  withUnrolledSteps(job.geometry.width / 16, [&](auto steps) {
    if (chunk == 8) {
      job.half ? rowPairLines8<true, steps.value>(job, d, c0) : rowPairLines8<false, steps.value>(job, d, c0);
    } else {
      job.half ? rowPairLines4<true, steps.value>(job, d, c0) : rowPairLines4<false, steps.value>(job, d, c0);
    }
  });
}

}  // namespace qaic::kernels::format
