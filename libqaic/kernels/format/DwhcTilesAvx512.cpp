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
#include "kernels/format/DwhcTilesAvx512.hpp"

// GCC 12's avx512fintrin.h initialises its "undefined" vectors from themselves, which
// -Wuninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13). Clang (the
// fuzz build) neither has the problem nor knows -Wmaybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/format/Avx2Common.hpp"

namespace qaic::kernels::format {
namespace {

// p + n, computed where it is used. Without the barrier GCC hoists every multiple of a
// runtime stride out of the loops (16 device columns, 8 planes) and spills them: rowPairLines8
// ran at 59-61 GB/s that way in a harness, 66-68 with the barrier, 68-72 with the strides as
// compile-time constants.
template <typename T>
[[gnu::always_inline]] inline T* stepped(T* p, int64_t n) {
  p += n;
  asm("" : "+r"(p));
  return p;
}

// The 16x16 transpose of the tile whose row i is load(i): store(j, column j). In-lane 4x4
// transposes of four rows at a time (32 shuffles), then the 4x4 transpose of the 128-bit lanes
// (32 lane shuffles), each column stored as soon as it is complete. Loading and transposing
// four rows at a time keeps the tile in registers; forced inline, because as a call (or with all
// sixteen rows loaded first) the tile went through the stack and the kernel ran at half the
// speed of the AVX2 one.
template <typename Load, typename Store>
[[gnu::always_inline]] inline void transposeTile(Load load, Store store) {
  __m512 u[16];  // u[4q + m], lane L: element 4L + m of rows 4q..4q+3
  #pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512 r0 = load(4 * q), r1 = load(4 * q + 1), r2 = load(4 * q + 2), r3 = load(4 * q + 3);
    const __m512 t0 = _mm512_unpacklo_ps(r0, r1), t1 = _mm512_unpackhi_ps(r0, r1);
    const __m512 t2 = _mm512_unpacklo_ps(r2, r3), t3 = _mm512_unpackhi_ps(r2, r3);
    u[4 * q + 0] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * q + 1] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * q + 2] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * q + 3] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  #pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44);  // lanes 0, 1 of both
    const __m512 v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);  // lanes 2, 3
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
    store(m, _mm512_shuffle_f32x4(v0, w0, 0x88));       // lane 0 of u[m], u[4+m], u[8+m], u[12+m]
    store(4 + m, _mm512_shuffle_f32x4(v0, w0, 0xDD));   // lane 1
    store(8 + m, _mm512_shuffle_f32x4(v1, w1, 0x88));   // lane 2
    store(12 + m, _mm512_shuffle_f32x4(v1, w1, 0xDD));  // lane 3
  }
}

// Device elements, 16 at a time; `mask` selects the first n of them at the edges.
template <bool kHalf>
struct DeviceIo16 {
  using Element = std::conditional_t<kHalf, uint16_t, float>;
  static __m512 load(const Element* p) {
    if constexpr (kHalf) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return _mm512_loadu_ps(p);
    }
  }
  static __m512 load(const Element* p, __mmask16 mask) {
    if constexpr (kHalf) {
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    } else {
      return _mm512_maskz_loadu_ps(mask, p);
    }
  }
  static void store(Element* p, __m512 v) {
    if constexpr (kHalf) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm512_storeu_ps(p, v);
    }
  }
  static void store(Element* p, __m512 v, __mmask16 mask) {
    if constexpr (kHalf) {
      _mm256_mask_storeu_epi16(p, mask, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm512_mask_storeu_ps(p, mask, v);
    }
  }
};

// One tile: user rows user + rows[s] (s < 16) at 16 columns against device columns
// dev + j * column (j < 16), 16 elements each. kStream: the user rows are written with
// non-temporal stores (every row segment then has to be a whole, aligned line).
template <bool kHalf, bool kToDevice, bool kStream = false>
[[gnu::always_inline]] inline void wholeTile(float* user, typename DeviceIo16<kHalf>::Element* dev,
                                             const int64_t* rows, int64_t column) {
  static_assert(!(kStream && kToDevice), "non-temporal stores are for user rows only");
  using Io = DeviceIo16<kHalf>;
  if constexpr (kToDevice) {
    transposeTile([&](int s) __attribute__((always_inline)) { return _mm512_loadu_ps(user + rows[s]); },
                  [&](int j, __m512 v) __attribute__((always_inline)) { Io::store(dev + j * column, v); });
  } else {
    // Column j + 1 follows column j: transposeTile loads them in order (see stepped()).
    auto* next = dev;
    transposeTile([&](int) __attribute__((always_inline)) {
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
    transposeTile([&](int s) __attribute__((always_inline)) { return _mm512_maskz_loadu_ps(rowMask(s), user + rows[s]); },
                  [&](int j, __m512 v) __attribute__((always_inline)) { Io::store(dev + j * column, v, columnMask(j)); });
  } else {
    transposeTile([&](int j) __attribute__((always_inline)) { return Io::load(dev + j * column, columnMask(j)); },
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
  for (int e = 0; e < 16 * kK; ++e) rows[e] = (e % kK) * H * W + (e / kK) * W;
  const int64_t column = a.wStride;  // H * kK
  const int64_t hFull = H / 16 * 16, wFull = W / 16 * 16;
  auto whole = [&](int64_t h0, int64_t w0, int k, auto stream) {
    wholeTile<kHalf, kToDevice, stream.value && !kToDevice>(plane + h0 * W + w0, device + h0 * kK + w0 * column + 16 * k,
                                                            rows + 16 * k, column);
  };
  constexpr std::false_type ordinaryStores;
  // Whole tiles. Orders as in the AVX2 kernel (DwhcTiles.cpp), except that chunks of any width
  // are read into user rows tile by tile: for cached tensors measured faster than group by group
  // (postprocess 1/8/112/112 0.42 -> 0.55 of memcpy), unlike with 8 x 8 tiles; from DRAM below.
  const bool fromDram = tensorFromDram(g);
  if (!kToDevice && fromDram) {
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
    const bool groupMajor = kToDevice && kK > 4 && fromDram;
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

// r[i] <- the 8x8 transpose of each 256-bit half of r[0..7] separately (both halves at once:
// 8 unpacks, 8 shuffles and 8 two-input lane permutes).
[[gnu::always_inline]] inline void transposeHalves8x8(__m512 r[8]) {
  // Lane 0 of a, lane 0 of b, lane 2 of a, lane 2 of b (and lanes 1 / 3): the last stage.
  const __m512i low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
  const __m512i high = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
  const __m512 t4 = _mm512_unpacklo_ps(r[4], r[5]), t5 = _mm512_unpackhi_ps(r[4], r[5]);
  const __m512 t6 = _mm512_unpacklo_ps(r[6], r[7]), t7 = _mm512_unpackhi_ps(r[6], r[7]);
  const __m512 s[8] = {_mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                       _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
                       _mm512_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
                       _mm512_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2))};
  #pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm512_permutex2var_ps(s[i % 4], i < 4 ? low : high, s[4 + i % 4]);
}

// The run at lo (eight elements) and the run at hi as the low and high half of one vector.
template <bool kHalf>
[[gnu::always_inline]] inline __m512 runPair(const typename DeviceIo<kHalf>::Element* lo,
                                             const typename DeviceIo<kHalf>::Element* hi) {
  if constexpr (kHalf) {
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1));
  } else {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)), _mm256_loadu_ps(hi), 1);
  }
}

// The 16 device runs lo + j * column (element j) and hi + j * column (element 8 + j), j < 8,
// transposed: r[e] holds element e of each of the 16 runs, in run order.
template <bool kHalf>
[[gnu::always_inline]] inline void transposeRunPairs(const typename DeviceIo<kHalf>::Element* lo,
                                                     const typename DeviceIo<kHalf>::Element* hi, int64_t column,
                                                     __m512 r[8]) {
  #pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = runPair<kHalf>(lo, hi);
    lo = stepped(lo, column);
    hi = stepped(hi, column);
  }
  transposeHalves8x8(r);
}

// 8 x 8 tiles two side by side: the 8-element runs of group k in device columns w0 + j and
// w0 + 8 + j share one vector (low and high half), and so do the 16-float user row segments of
// both tiles, so one 8x8 transpose of both halves moves 128 elements with 8 user-side vectors
// (one 64-byte access per row instead of two 32-byte ones), 16 device-side halves and 24
// shuffles. A last tile column of eight (W = 56: 48..55) takes the AVX2 tile. Bands of eight
// rows; cached tensors only (the callers' choice), so no DRAM-specific order.
template <bool kHalf, bool kToDevice, int kK>
void wideTiles(const PlanarJob& job, int64_t d, int64_t c0) {
  using Io8 = DeviceIo<kHalf>;
  using Element = typename Io8::Element;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  auto* device = reinterpret_cast<Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  int64_t rows[8 * kK];  // user offset of tile row e, relative to (c0, h0, w0)
  for (int e = 0; e < 8 * kK; ++e) rows[e] = (e % kK) * H * W + (e / kK) * W;
  const int64_t column = a.wStride;  // H * kK
  auto storePair = [&](Element* dev, int j, __m512 v) __attribute__((always_inline)) {
    if constexpr (kHalf) {
      const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dev + j * column), _mm256_castsi256_si128(h));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dev + (8 + j) * column), _mm256_extracti128_si256(h, 1));
    } else {
      _mm256_storeu_ps(dev + j * column, _mm512_castps512_ps256(v));
      _mm256_storeu_ps(dev + (8 + j) * column, _mm512_extractf32x8_ps(v, 1));
    }
  };
  // Tile pair (both tiles of group k at w0 and w0 + 8) and the last single tile of group k.
  auto pair = [&](float* user, Element* dev, const int64_t* groupRows) __attribute__((always_inline)) {
    __m512 r[8];
    if constexpr (kToDevice) {
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_ps(user + groupRows[i]);
      transposeHalves8x8(r);
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) storePair(dev, j, r[j]);
    } else {
      transposeRunPairs<kHalf>(dev, dev + 8 * column, column, r);
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm512_storeu_ps(user + groupRows[i], r[i]);
    }
  };
  // Into float16 device columns: converted first and transposed as 16-bit elements (as the AVX2
  // kernel's halfGroupPair), one tile per 128-bit lane. Against the float transpose with a
  // conversion per column pair, preprocess 1/20/56/56 ran at 62.7-63.1 against 59.8-61.7 GB/s.
  auto halfPair = [&](const float* user, Element* dev, const int64_t* groupRows) __attribute__((always_inline)) {
    __m256i x[8];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) x[i] = _mm512_cvtps_ph(_mm512_loadu_ps(user + groupRows[i]), _MM_FROUND_TO_NEAREST_INT);
    transpose8x8Epi16(x);  // x[j] = column j (low lane) and 8 + j (high lane)
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      _mm256_storeu2_m128i(reinterpret_cast<__m128i*>(dev + (8 + j) * column), reinterpret_cast<__m128i*>(dev + j * column),
                           x[j]);
    }
  };
  auto single = [&](float* user, Element* dev, const int64_t* groupRows) __attribute__((always_inline)) {
    __m256 r[8];
    if constexpr (kToDevice) {
      loadTransposed8x8([&](int i) { return user + groupRows[i]; }, r);
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) Io8::store8(dev + j * column, r[j]);
    } else {
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) r[j] = Io8::load8(dev + j * column);
      transpose8x8(r);
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(user + groupRows[i], r[i]);
    }
  };
  const int64_t wPairs = W / 16 * 16;
  for (int64_t h0 = 0; h0 < H; h0 += 8) {
    float* user = plane + h0 * W;
    auto* dev = device + h0 * kK;
    // Into the device format tile by tile (all groups of a tile pair), as the AVX2 kernel does for
    // cached tensors (1/20/56/56: 57 against 55-56 GB/s group by group); into user rows group by
    // group across the band (its order for wide chunks read into user rows).
    if constexpr (kToDevice) {
      for (int64_t w0 = 0; w0 < wPairs; w0 += 16) {
        #pragma GCC unroll 1
        for (int k = 0; k < kK; ++k) {
          if constexpr (kHalf) {
            halfPair(user + w0, dev + w0 * column + 8 * k, rows + 8 * k);
          } else {
            pair(user + w0, dev + w0 * column + 8 * k, rows + 8 * k);
          }
        }
      }
      if (wPairs < W) {
        #pragma GCC unroll 1
        for (int k = 0; k < kK; ++k) single(user + wPairs, dev + wPairs * column + 8 * k, rows + 8 * k);
      }
      continue;
    }
    for (int k = 0; k < kK; ++k) {
      for (int64_t w0 = 0; w0 < wPairs; w0 += 16) pair(user + w0, dev + w0 * column + 8 * k, rows + 8 * k);
      if (wPairs < W) single(user + wPairs, dev + wPairs * column + 8 * k, rows + 8 * k);
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
template <bool kHalf>
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
  for (int64_t h = 0; h < H; h += 2) {
    const Element* even = device + h * 8;  // the runs of row h
    const Element* odd = even + 8;
    float* rows = user + h * W;  // row h of the chunk's first plane
    line(even, even + 8 * column, rows);
    line(even + wPairs * column, odd, rows + wPairs);
    for (int64_t w0 = 16; w0 < wPairs; w0 += 16) {
      line(even + w0 * column, even + (w0 + 8) * column, rows + w0);
      line(odd + (w0 - 8) * column, odd + w0 * column, rows + W + w0 - 8);
    }
    line(odd + (wPairs - 8) * column, odd + wPairs * column, rows + W + wPairs - 8);
  }
}

// The same for chunks of 4 channels. One device run holds both rows, so each of wideTiles' pairs
// gives the even row's line and two half lines of the odd row, which are joined with the
// neighbouring pair's (`carry`); the line across the two rows joins the even row's last eight
// columns with the odd row's first eight. Output e of a pair is channel e % 4 of row h + e / 4.
template <bool kHalf>
void rowPairLines4(const PlanarJob& job, int64_t d, int64_t c0) {
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width, plane = H * W;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  const auto* device = reinterpret_cast<const typename DeviceIo<kHalf>::Element*>(job.device) + a.base;
  float* const user = job.user + (d * C + c0) * plane;
  const int64_t column = a.wStride, wPairs = W - 8;
  for (int64_t h = 0; h < H; h += 2) {
    const auto* runs = device + h * 4;  // rows h and h + 1
    float* rows = user + h * W;         // row h of the chunk's first plane
    __m256 tail[8];                     // output e at W - 8..W - 1
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) tail[j] = DeviceIo<kHalf>::load8(runs + (wPairs + j) * column);
    transpose8x8(tail);
    __m512 carry[4];  // the odd row's last pair, whose upper half starts the next line
    for (int64_t w0 = 0; w0 < wPairs; w0 += 16) {
      __m512 r[8];
      transposeRunPairs<kHalf>(runs + w0 * column, runs + (w0 + 8) * column, column, r);
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
    }
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      _mm512_storeu_ps(rows + c * plane + W + wPairs - 8,
                       _mm512_shuffle_f32x4(carry[c], _mm512_castps256_ps512(tail[4 + c]), 0x4E));
    }
  }
}

// Whether rowPairLines8 / rowPairLines4 apply to the job's chunks of 8 and of 4 (both read
// cached tensors into NCHW floats).
inline bool rowPairLinesApply(const PlanarJob& job) {
  const DeviceGeometry& g = job.geometry;
  return g.width % 16 == 8 && g.width >= 24 && g.height % 2 == 0 && reinterpret_cast<uintptr_t>(job.user) % 64 == 0;
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
  const bool rowPairLines = !kToDevice && !fromDram && rowPairLinesApply(job);
  for (int64_t d = 0; d < g.depth; ++d) {
    for (int64_t c0 = 0; c0 < g.channels; c0 += 8) {
      const int64_t chunk = g.channels - c0 < 8 ? g.channels - c0 : 8;
      withChannelCount(chunk, [&](auto k) {
        if constexpr (!kToDevice && k.value == 8) {
          if (rowPairLines) return rowPairLines8<kHalf>(job, d, c0);
        }
        if constexpr (!kToDevice && k.value == 4) {
          if (rowPairLines) return rowPairLines4<kHalf>(job, d, c0);
        }
        // Whole 16 x 16 tiles into the device format take wideTiles' pairs too for chunks of 8
        // (preprocess 1/8/112/112 54-56 -> 71 GB/s).
        const bool sixteenPairs = kToDevice && k.value == 8 && !bands;
        if ((eightTiles || sixteenPairs) && !fromDram) return wideTiles<kHalf, kToDevice, k.value>(job, d, c0);
        if (eightTiles && !kToDevice) return dwhcTileRegion(job, d, c0, 0, g.height, 0, g.width);
        chunkTiles<kHalf, kToDevice, k.value>(job, d, c0);
      });
    }
  }
}

}  // namespace

void dwhcTilesAvx512(const PlanarJob& job) {
  if (job.half) {
    job.toDevice ? tiles<true, true>(job) : tiles<true, false>(job);
  } else {
    job.toDevice ? tiles<false, true>(job) : tiles<false, false>(job);
  }
}

}  // namespace qaic::kernels::format
