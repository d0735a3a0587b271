// SPDX-License-Identifier: Apache-2.0
// Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mf16c -mavx2; nothing here runs
// unless cpuHasAvx512(). NCHW floats <-> DWHC, 16 x 16 tiles.
//
// The AVX2 kernel's tiles (DwhcTiles.cpp), twice as wide: sixteen rows h0..h0+15 of a chunk of K
// channels are 16K consecutive elements of each device column, element e being channel e % K of
// row h0 + e / K. The user rows (plane e % K, row h0 + e / K) at w0..w0+15 for e = 16k..16k+15
// are the rows of a 16x16 tile; its transpose gives each of the 16 columns its elements
// 16k..16k+15. A user row segment is then one 64-byte vector (a whole cache line when the row
// is aligned), a device column segment one 64-byte (float) or 32-byte (float16) vector.
// Tiles at the bottom and right edges are the same tiles with masked loads and stores.
//
// Cached tensors read into user rows go by sweeps across the whole width (DwhcSweepsAvx512.cpp);
// the building blocks shared with them are in Avx512Common.hpp.
#include "kernels/format/DwhcTilesAvx512.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/format/Avx512Common.hpp"
#include "kernels/format/DwhcSweepsAvx512.hpp"

namespace qaic::kernels::format {
namespace {

// One tile: user rows user + rows[s] (s < 16) at 16 columns against device columns
// dev + j * column (j < 16), 16 elements each. kStream: the user rows are written with
// non-temporal stores (every row segment then has to be a whole, aligned line).
template <bool kHalf, bool kToDevice, bool kStream = false>
[[gnu::always_inline]] inline void wholeTile(float* user, typename DeviceIo16<kHalf>::Element* dev, const int64_t* rows,
                                             int64_t column) {
  static_assert(!(kStream && kToDevice), "non-temporal stores are for user rows only");
  using Io = DeviceIo16<kHalf>;
  if constexpr (kToDevice) {
    transposeTile(
        [&](int s) __attribute__((always_inline)) { return _mm512_loadu_ps(user + rows[s]); },
        [&](int j, __m512 v) __attribute__((always_inline)) { Io::store(dev + j * column, v); });
  } else {
    // Column j + 1 follows column j: transposeTile loads them in order (see stepped()).
    auto* next = dev;
    transposeTile(
        [&](int) __attribute__((always_inline)) {
          const __m512 v = Io::load(next);
          next = stepped(next, column);
          return v;
        },
        [&](int s, __m512 v) __attribute__((always_inline)) {
          if constexpr (kStream) {
            _mm512_stream_ps(user + rows[s], v);
          } else {
            _mm512_storeu_ps(user + rows[s], v);
          }
        });
  }
}

// The same at an edge: only the first n tile rows (column elements) and m columns exist. Masks
// instead of branches: a row or column that does not exist has an empty mask, and a masked
// access does not touch memory outside its mask.
template <bool kHalf, bool kToDevice>
void edgeTile(float* user, typename DeviceIo16<kHalf>::Element* dev, const int64_t* rows, int64_t column, int64_t n,
              int64_t m) {
  using Io = DeviceIo16<kHalf>;
  const __mmask16 elements = static_cast<__mmask16>((1u << n) - 1u), columns = static_cast<__mmask16>((1u << m) - 1u);
  auto rowMask = [&](int s) __attribute__((always_inline)) { return s < n ? columns : __mmask16{0}; };
  auto columnMask = [&](int j) __attribute__((always_inline)) { return j < m ? elements : __mmask16{0}; };
  if constexpr (kToDevice) {
    transposeTile(
        [&](int s) __attribute__((always_inline)) { return _mm512_maskz_loadu_ps(rowMask(s), user + rows[s]); },
        [&](int j, __m512 v) __attribute__((always_inline)) { Io::store(dev + j * column, v, columnMask(j)); });
  } else {
    transposeTile(
        [&](int j) __attribute__((always_inline)) { return Io::load(dev + j * column, columnMask(j)); },
        [&](int s, __m512 v) __attribute__((always_inline)) { _mm512_mask_storeu_ps(user + rows[s], rowMask(s), v); });
  }
}

template <bool kHalf, bool kToDevice, int kK>
void chunkTiles(const PlanarJob& job, int64_t d, int64_t c0) {
  using Element = typename DeviceIo16<kHalf>::Element;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  auto* device = reinterpret_cast<Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  int64_t rows[16 * kK];  // user offset of tile row e, relative to (c0, h0, w0)
  tileRowOffsets(g, kK, 16 * kK, rows);
  const int64_t column = a.wStride;  // H * kK
  const int64_t hFull = H / 16 * 16, wFull = W / 16 * 16;
  auto whole = [&](int64_t h0, int64_t w0, int k, auto stream) {
    wholeTile<kHalf, kToDevice, stream.value && !kToDevice>(
        plane + h0 * W + w0, device + h0 * kK + w0 * column + 16 * k, rows + 16 * k, column);
  };
  constexpr std::false_type ordinaryStores;
  // Whole tiles. Cached tensors read into user rows: sweeps across the width (DwhcSweepsAvx512.cpp;
  // postprocess 1/8/112/112 0.48 -> 0.62 of memcpy against tile by tile, which had beaten group by
  // group, 0.42). From DRAM: below. Into the device format: the AVX2 kernel's orders
  // (DwhcTiles.cpp).
  const bool fromDram = tensorFromDram(g);
  if (!kToDevice && !fromDram) {
    sweepWholeTiles(job, d, c0);
  } else if (!kToDevice) {
    // Tensors from DRAM read into user rows, chunks of any width: tile columns across blocks of
    // bands, as the AVX2 kernel does for narrow chunks (wide chunks group by group instead: 64/8/
    // 112/112 at 0.50-0.55 of memcpy, 0.87-0.89 this way). Such a tensor is not read back from
    // the caches, so when every whole-tile row segment is an aligned line the user rows are
    // written with non-temporal stores: no line is read from DRAM only to be overwritten.
    // 128/3/224/224 ran at 0.32-0.55 of memcpy with ordinary stores, 0.68-0.70 streamed
    // (device-format.md, "Postprocess from DRAM").
    const bool streamed = W % 16 == 0 && reinterpret_cast<uintptr_t>(job.user) % 64 == 0;
    auto tileColumns = [&](auto stream) {
      const int64_t blockRows = std::max<int64_t>(16, std::min<int64_t>(hFull, 1024 / kK / 16 * 16));
      for (int64_t hb = 0; hb < hFull; hb += blockRows) {
        const int64_t hbEnd = std::min(hFull, hb + blockRows);
        for (int64_t w0 = 0; w0 < wFull; w0 += 16) {
          for (int64_t h0 = hb; h0 < hbEnd; h0 += 16) {
#pragma GCC unroll 1
            for (int k = 0; k < kK; ++k) whole(h0, w0, k, stream);
          }
        }
      }
    };
    if (streamed) {
      tileColumns(std::true_type{});
      _mm_sfence();  // the stores are weakly ordered: complete them before the caller publishes the buffer
    } else {
      tileColumns(ordinaryStores);
    }
  } else {
    const bool groupMajor = kK > 4 && fromDram;
    for (int64_t h0 = 0; h0 < hFull; h0 += 16) {
      if (groupMajor) {
        for (int k = 0; k < kK; ++k) {
          for (int64_t w0 = 0; w0 < wFull; w0 += 16) whole(h0, w0, k, ordinaryStores);
        }
      } else {
        for (int64_t w0 = 0; w0 < wFull; w0 += 16) {
// Not unrolled: with the groups unrolled GCC hoists all 16K row addresses and runs
// out of registers, and the tiles of narrow chunks went through the stack.
#pragma GCC unroll 1
          for (int k = 0; k < kK; ++k) whole(h0, w0, k, ordinaryStores);
        }
      }
    }
  }
  // The edges: the last W % 16 columns of the whole bands, then the last H % 16 rows.
  auto edge = [&](int64_t h0, int64_t bandRows, int64_t w0, int64_t columns) {
    const int64_t elements = bandRows * kK;
    for (int64_t e0 = 0; e0 < elements; e0 += 16) {
      edgeTile<kHalf, kToDevice>(plane + h0 * W + w0, device + h0 * kK + w0 * column + e0, rows + e0, column,
                                 std::min<int64_t>(16, elements - e0), columns);
    }
  };
  if (wFull < W) {
    for (int64_t h0 = 0; h0 < hFull; h0 += 16) edge(h0, 16, wFull, W - wFull);
  }
  if (hFull < H) {
    for (int64_t w0 = 0; w0 < W; w0 += 16) edge(hFull, H - hFull, w0, std::min<int64_t>(16, W - w0));
  }
}

// 8 x 8 tiles two side by side: the 8-element runs of group k in device columns w0 + j and
// w0 + 8 + j share one vector (low and high half), and so do the 16-float user row segments of
// both tiles, so one 8x8 transpose of both halves moves 128 elements with 8 user-side vectors
// (one 64-byte access per row instead of two 32-byte ones), 16 device-side halves and 24
// shuffles. A last tile column of eight (W = 56: 48..55) takes the AVX2 tile. Bands of eight
// rows; cached tensors only (the callers' choice), so no DRAM-specific order. kPairs = W / 16
// sweeps each group across the band's tile pairs unrolled (DwhcSweepsAvx512.cpp says why),
// kPairs = 0 loops over them.
template <bool kHalf, bool kToDevice, int kPairs>
void wideTiles(const PlanarJob& job, int64_t d, int64_t c0) {
  using Io8 = DeviceIo<kHalf>;
  using Element = typename Io8::Element;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  auto* device = reinterpret_cast<Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  const int64_t K = a.channels;
  int64_t rows[8 * 8];  // user offset of tile row e, relative to (c0, h0, w0)
  tileRowOffsets(g, K, 8 * K, rows);
  const int64_t column = a.wStride;  // H * K
  // The device side walks the columns with stepped pointers: each tile pair starts where the
  // previous one's sixteenth column ends. With every multiple of the column stride hoisted
  // instead, GCC kept them on the stack and reloaded one per device access.
  const int64_t halfway = 8 * column, pairStride = 16 * column;
  // Tile pair (both tiles of group k at w0 and w0 + 8, device columns from `next` on; `next`
  // moves on to the pair after it) and the last single tile of group k.
  auto pair = [&](float* user, Element*& next, const int64_t* groupRows) __attribute__((always_inline)) {
    __m512 r[8];
    if constexpr (kToDevice) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_ps(user + groupRows[i]);
      transposeHalves8x8(r);
      Element* lo = next;
      Element* hi = stepped(next, halfway);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        if constexpr (kHalf) {
          const __m256i h = _mm512_cvtps_ph(r[j], _MM_FROUND_TO_NEAREST_INT);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(lo), _mm256_castsi256_si128(h));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(hi), _mm256_extracti128_si256(h, 1));
        } else {
          _mm256_storeu_ps(lo, _mm512_castps512_ps256(r[j]));
          _mm256_storeu_ps(hi, _mm512_extractf32x8_ps(r[j], 1));
        }
        lo = stepped(lo, column);
        hi = stepped(hi, column);
      }
    } else {
      transposeRunPairs<kHalf>(next, stepped(next, halfway), column, r);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm512_storeu_ps(user + groupRows[i], r[i]);
    }
    next = stepped(next, pairStride);
  };
  // Into float16 device columns: converted first and transposed as 16-bit elements (as the AVX2
  // kernel's halfGroupPair), one tile per 128-bit lane. Against the float transpose with a
  // conversion per column pair, preprocess 1/20/56/56 ran at 62.7-63.1 against 59.8-61.7 GB/s.
  auto halfPair = [&](const float* user, Element*& next, const int64_t* groupRows) __attribute__((always_inline)) {
    __m256i x[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) x[i] = _mm512_cvtps_ph(_mm512_loadu_ps(user + groupRows[i]), _MM_FROUND_TO_NEAREST_INT);
    transpose8x8Epi16(x);  // x[j] = column j (low lane) and 8 + j (high lane)
    Element* lo = next;
    Element* hi = stepped(next, halfway);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      _mm256_storeu2_m128i(reinterpret_cast<__m128i*>(hi), reinterpret_cast<__m128i*>(lo), x[j]);
      lo = stepped(lo, column);
      hi = stepped(hi, column);
    }
    next = stepped(next, pairStride);
  };
  // Groups k and k + 1 together (K even): their 16-byte runs in a column are neighbours, so each
  // column takes one 32-byte store instead of two 16-byte ones.
  auto halfPairOfGroups = [&](const float* user, Element*& next, const int64_t* groupRows)
      __attribute__((always_inline)) {
    __m256i x[8], y[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      x[i] = _mm512_cvtps_ph(_mm512_loadu_ps(user + groupRows[i]), _MM_FROUND_TO_NEAREST_INT);
      y[i] = _mm512_cvtps_ph(_mm512_loadu_ps(user + groupRows[8 + i]), _MM_FROUND_TO_NEAREST_INT);
    }
    transpose8x8Epi16(x);
    transpose8x8Epi16(y);
    Element* lo = next;
    Element* hi = stepped(next, halfway);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo), _mm256_permute2x128_si256(x[j], y[j], 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi), _mm256_permute2x128_si256(x[j], y[j], 0x31));
      lo = stepped(lo, column);
      hi = stepped(hi, column);
    }
    next = stepped(next, pairStride);
  };
  auto single = [&](float* user, Element* dev, const int64_t* groupRows) __attribute__((always_inline)) {
    __m256 r[8];
    if constexpr (kToDevice) {
      loadTransposed8x8([&](int i) { return user + groupRows[i]; }, r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        Io8::store8(dev, r[j]);
        dev = stepped(dev, column);
      }
    } else {
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        r[j] = Io8::load8(dev);
        dev = stepped(dev, column);
      }
      transpose8x8(r);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(user + groupRows[i], r[i]);
    }
  };
  const int64_t wPairs = W / 16 * 16;
  // One step: group k of a band of eight rows (elements 8k..8k+7 of every column), all its tile
  // pairs across the width, then the last single tile. Swept (unrolled, stepped pointers),
  // preprocess 1/8/112/112 ran at 75-79 GB/s against 61 before, when the device format was written
  // tile pair by tile pair in a loop; 1/20/56/56 57-58 against 56-60, the same within the noise.
  auto group = [&](float* user, Element* next, const int64_t* groupRows) __attribute__((always_inline)) {
    auto tilePair = [&](int64_t w0) __attribute__((always_inline)) {
      if constexpr (kToDevice && kHalf) {
        halfPair(user + w0, next, groupRows);
      } else {
        pair(user + w0, next, groupRows);
      }
    };
    if constexpr (kPairs > 0) {
#pragma GCC unroll 8
      for (int t = 0; t < kPairs; ++t) tilePair(16 * t);
    } else {
      for (int64_t w0 = 0; w0 < wPairs; w0 += 16) tilePair(w0);
    }
    if (wPairs < W) single(user + wPairs, next, groupRows);
  };
  // Two groups per sweep into float16 columns (halfPairOfGroups), for chunks of an even width
  // and W a multiple of 16. Preprocess 1/8/112/112 ran at 97.8-107.3 GB/s against 91.7-95.8
  // one group per sweep (five same-run pairs, AMD EPYC Zen 5); at W = 56 (a last single tile
  // per group) 1/20/56/56 ran at 72.9 against 74.9-76.4, so there each group keeps its sweep.
  auto groupPair = [&](const float* user, Element* next, const int64_t* groupRows) __attribute__((always_inline)) {
    if constexpr (kPairs > 0) {
#pragma GCC unroll 8
      for (int t = 0; t < kPairs; ++t) halfPairOfGroups(user + 16 * t, next, groupRows);
    } else {
      for (int64_t w0 = 0; w0 < wPairs; w0 += 16) halfPairOfGroups(user + w0, next, groupRows);
    }
  };
  for (int64_t h0 = 0; h0 < H; h0 += 8) {
    if constexpr (kToDevice && kHalf) {
      if (K % 2 == 0 && wPairs == W) {
#pragma GCC unroll 1
        for (int k = 0; k < K; k += 2) groupPair(plane + h0 * W, device + h0 * K + 8 * k, rows + 8 * k);
        continue;
      }
    }
#pragma GCC unroll 1
    for (int k = 0; k < K; ++k) group(plane + h0 * W, device + h0 * K + 8 * k, rows + 8 * k);
  }
}

template <bool kHalf, bool kToDevice>
void tiles(const PlanarJob& job) {
  const DeviceGeometry& g = job.geometry;
  // H and W multiples of 8 but not both of 16 (e.g. 56 x 56): masked 16 x 16 edge tiles would
  // take a quarter of the pixels or more. There cached tensors take wideTiles in both
  // directions (every chunk width); tensors from DRAM read into user rows the AVX2 kernel's
  // 8 x 8 tiles and tile orders, and written into the device format the 16 x 16 tiles (only
  // when forced: Auto takes the AVX2 kernel there). Measured (device-format.md), GB/s at 56 x 56:
  // postprocess chunks of 2 channels 37 -> 61 and of 4 channels 44 -> 50-60 against two 8 x 8
  // tiles per vector down the device columns (pairTiles, removed), chunks of 8 equal to the
  // AVX2 tiles (59-60), 1/20/56/56 57-59 -> 62-63; preprocess 1/20/56/56 51-52 -> 57 against the
  // AVX2 kernel. With masked edges instead, and with the 16 x 16 tiles inside and 8 x 8 tiles for
  // the bands of eight, 1/20/56/56 ran at 0.37 of memcpy.
  const bool bands = g.height % 16 != 0 || g.width % 16 != 0;
  const bool eightTiles = bands && g.height % 8 == 0 && g.width % 8 == 0;
  const bool fromDram = tensorFromDram(g);
  const bool byLines = !kToDevice && !fromDram && rowPairLinesApply(job);  // chunks of 8 and 4
  forEachChunk(g, [&](int64_t d, int64_t c0, int64_t chunk) {
    if (byLines && (chunk == 8 || chunk == 4)) return rowPairLines(job, d, c0);
    // Whole 16 x 16 tiles into the device format take wideTiles' pairs too, for every chunk
    // width: preprocess 1/8/112/112 54-56 -> 71 GB/s; 1/3/224/224 (chunks of 3), since the
    // sweeps, 69.9-78.4 against the AVX2 kernel's 63.8-68.8 and the 16 x 16 tiles' 64.8-71.4
    // GB/s in the same runs (AMD EPYC Zen 5, device-format.md).
    const bool sixteenPairs = kToDevice && !bands;
    if ((eightTiles || sixteenPairs) && !fromDram)
      return withUnrolledSteps(g.width / 16, [&](auto pairs) { wideTiles<kHalf, kToDevice, pairs.value>(job, d, c0); });
    if (eightTiles && !kToDevice) return dwhcTileRegion(job, d, c0, 0, g.height, 0, g.width);
    withChannelCount(chunk, [&](auto k) { chunkTiles<kHalf, kToDevice, k.value>(job, d, c0); });
  });
}

}  // namespace

void dwhcTilesAvx512(const PlanarJob& job) {
  withJobKind(job, [&](auto half, auto toDevice) { tiles<half.value, toDevice.value>(job); });
}

}  // namespace qaic::kernels::format
