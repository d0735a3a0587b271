// SPDX-License-Identifier: Apache-2.0
// Built with -mf16c -mavx2. NCHW floats <-> DHWC (or DWHC of one row, the same order), per row.
//
// A DHWC row of a chunk of K channels is the K user rows interleaved: element w*K + c is channel
// c at w. Each 128-bit lane takes L consecutive w of every channel (L = 8 float16 or 4 floats)
// and produces the lane's K*L interleaved elements as K vectors, each the OR of K byte shuffles
// (pshufb) with precomputed masks; the other direction uses the inverse masks. A chunk of eight
// channels is an 8x8 transpose instead, which needs fewer shuffles. Float16 elements are
// converted before interleaving / after de-interleaving, so shuffles move 16-bit elements.
// The last W % L pixels of each row go through planarRegion.
#include "kernels/format/Avx2Common.hpp"
#include "kernels/format/PlanarKernels.hpp"

namespace qaic::kernels::format {
namespace {

constexpr uint8_t kZeroLane = 0x80;  // a pshufb index that yields zero

// masks[k][c]: interleave (to device) - which bytes of input channel c go to output vector k.
// inverse[c][k]: de-interleave (to user) - which bytes of device vector k go to channel c.
template <int kK, int kElementBytes>
struct ShuffleMasks {
  static constexpr int kLane = 16 / kElementBytes;  // elements per 128-bit lane
  __m256i masks[kK][kK];
  __m256i inverse[kK][kK];

  ShuffleMasks() {
    for (int i = 0; i < kK; ++i) {
      for (int j = 0; j < kK; ++j) {
        alignas(32) uint8_t to[32], from[32];
        for (int b = 0; b < 16; ++b) {
          const int part = b % kElementBytes;
          // masks[i][j]: byte b of output vector i is interleaved element e = channel e % K at
          // w = e / K; it comes from input channel j if e % K == j.
          const int e = kLane * i + b / kElementBytes;
          to[b] = e % kK == j ? static_cast<uint8_t>((e / kK) * kElementBytes + part) : kZeroLane;
          // inverse[i][j]: byte b of channel i's output (w = b / E) is interleaved element
          // w * K + i, which sits in device vector j if (w * K + i) / L == j.
          const int source = (b / kElementBytes) * kK + i;
          from[b] = source / kLane == j ? static_cast<uint8_t>((source % kLane) * kElementBytes + part) : kZeroLane;
          to[b + 16] = to[b];  // the same pattern in both lanes
          from[b + 16] = from[b];
        }
        masks[i][j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(to));
        inverse[i][j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(from));
      }
    }
  }
};

template <bool kHalf, bool kToDevice, int kK, int kLanes>
inline void shuffleStep(const ShuffleMasks<kK, kHalf ? 2 : 4>& m, float* user, int64_t planeStride,
                        typename DeviceIo<kHalf>::Element* dev) {
  constexpr int kLane = 16 / (kHalf ? 2 : 4);
  __m256i in[kK];
  if constexpr (kToDevice) {
#pragma GCC unroll 8
    for (int c = 0; c < kK; ++c) {
      const float* row = user + c * planeStride;
      __m128i low;
      if constexpr (kHalf) {
        low = _mm256_cvtps_ph(_mm256_loadu_ps(row), _MM_FROUND_TO_NEAREST_INT);
      } else {
        low = _mm_castps_si128(_mm_loadu_ps(row));
      }
      if constexpr (kLanes == 1) {
        in[c] = _mm256_castsi128_si256(low);  // the high lane's result is never stored
      } else if constexpr (kHalf) {
        in[c] = _mm256_set_m128i(_mm256_cvtps_ph(_mm256_loadu_ps(row + 8), _MM_FROUND_TO_NEAREST_INT), low);
      } else {
        in[c] = _mm256_castps_si256(_mm256_loadu_ps(row));
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < kK; ++k) {
      __m256i v = _mm256_shuffle_epi8(in[0], m.masks[k][0]);
#pragma GCC unroll 8
      for (int c = 1; c < kK; ++c) v = _mm256_or_si256(v, _mm256_shuffle_epi8(in[c], m.masks[k][c]));
      if constexpr (kLanes == 1) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dev + kLane * k), _mm256_castsi256_si128(v));
      } else {
        _mm256_storeu2_m128i(reinterpret_cast<__m128i*>(dev + kLane * kK + kLane * k),
                             reinterpret_cast<__m128i*>(dev + kLane * k), v);
      }
    }
  } else {
#pragma GCC unroll 8
    for (int k = 0; k < kK; ++k) {
      const auto* low = reinterpret_cast<const __m128i*>(dev + kLane * k);
      if constexpr (kLanes == 1) {
        in[k] = _mm256_castsi128_si256(_mm_loadu_si128(low));
      } else {
        in[k] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(dev + kLane * kK + kLane * k), low);
      }
    }
#pragma GCC unroll 8
    for (int c = 0; c < kK; ++c) {
      __m256i v = _mm256_shuffle_epi8(in[0], m.inverse[c][0]);
#pragma GCC unroll 8
      for (int k = 1; k < kK; ++k) v = _mm256_or_si256(v, _mm256_shuffle_epi8(in[k], m.inverse[c][k]));
      float* row = user + c * planeStride;
      if constexpr (kHalf) {
        _mm256_storeu_ps(row, _mm256_cvtph_ps(_mm256_castsi256_si128(v)));
        if constexpr (kLanes == 2) _mm256_storeu_ps(row + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1)));
      } else if constexpr (kLanes == 1) {
        _mm_storeu_ps(row, _mm_castsi128_ps(_mm256_castsi256_si128(v)));
      } else {
        _mm256_storeu_ps(row, _mm256_castsi256_ps(v));
      }
    }
  }
}

// Pixels [0, wEnd) of a row; wEnd is a multiple of the lane's element count L.
template <bool kHalf, bool kToDevice, int kK>
void shuffleRow(const ShuffleMasks<kK, kHalf ? 2 : 4>& m, float* user, int64_t planeStride,
                typename DeviceIo<kHalf>::Element* device, int64_t wEnd) {
  constexpr int kLane = 16 / (kHalf ? 2 : 4);
  int64_t w0 = 0;
  for (; w0 + 2 * kLane <= wEnd; w0 += 2 * kLane) {
    shuffleStep<kHalf, kToDevice, kK, 2>(m, user + w0, planeStride, device + w0 * kK);
  }
  if (w0 < wEnd) shuffleStep<kHalf, kToDevice, kK, 1>(m, user + w0, planeStride, device + w0 * kK);
}

template <bool kHalf, bool kToDevice>
void transposeRow(float* user, int64_t planeStride, typename DeviceIo<kHalf>::Element* device, int64_t wEnd) {
  using Io = DeviceIo<kHalf>;
  for (int64_t w0 = 0; w0 < wEnd; w0 += 8) {
    auto* dev = device + w0 * 8;
    __m256 r[8];
    if constexpr (kToDevice) {
      loadTransposed8x8([&](int c) { return user + c * planeStride + w0; }, r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) Io::store8(dev + 8 * j, r[j]);
    } else {
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) r[j] = Io::load8(dev + 8 * j);
      transpose8x8(r);
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) _mm256_storeu_ps(user + c * planeStride + w0, r[c]);
    }
  }
}

template <bool kHalf, bool kToDevice, int kK>
void chunkRows(const PlanarJob& job, int64_t d, int64_t c0) {
  using Element = typename DeviceIo<kHalf>::Element;
  const DeviceGeometry& g = job.geometry;
  const int64_t C = g.channels, H = g.height, W = g.width;
  const ChunkAddress a = chunkAddress(g, job.layout, d, c0);
  auto* device = reinterpret_cast<Element*>(job.device) + a.base;
  float* plane = job.user + (d * C + c0) * H * W;
  constexpr int64_t kStep = kK == 8 ? 8 : 16 / (kHalf ? 2 : 4);
  const int64_t wEnd = W / kStep * kStep;
  if constexpr (kK == 8) {
    for (int64_t h = 0; h < H; ++h) transposeRow<kHalf, kToDevice>(plane + h * W, H * W, device + h * a.hStride, wEnd);
  } else {
    const ShuffleMasks<kK, kHalf ? 2 : 4> masks;
    for (int64_t h = 0; h < H; ++h) {
      shuffleRow<kHalf, kToDevice, kK>(masks, plane + h * W, H * W, device + h * a.hStride, wEnd);
    }
  }
  planarRegion(job, d, c0, 0, H, wEnd, W);
}

}  // namespace

void dhwcRows(const PlanarJob& job) {
  withJobKind(job, [&](auto half, auto toDevice) {
    forEachChunk(job.geometry, [&](int64_t d, int64_t c0, int64_t chunk) {
      withChannelCount(chunk, [&](auto k) { chunkRows<half.value, toDevice.value, k.value>(job, d, c0); });
    });
  });
}

}  // namespace qaic::kernels::format
