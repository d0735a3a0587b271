// SPDX-License-Identifier: Apache-2.0
// The AVX2 MX kernels (built with -mavx2 -mfma; called only after mxAvx2Available()). Eight
// codes unpack from two 3-byte groups broadcast to both 128-bit lanes: vpshufb and vpsrlvd as in
// the AVX-512 file, then four 8-entry vpermps lookups blended on bits 3 and 4 of the code.
#include <immintrin.h>

#include <algorithm>

#include "kernels/mx/Mxfp6Kernels.hpp"

namespace qaic::kernels::mx::detail {
namespace {

// Local copies of the layout arithmetic (Mxfp6Format.hpp): no inline function with external
// linkage is compiled with this file's instruction set.
constexpr int64_t kElements = 32, kPackedBytes = 24, kPanel = 16;
int64_t blocksOf(int64_t k) { return (k + kElements - 1) / kElements; }
int64_t columnStride(int64_t k) { return blocksOf(k) * (kPackedBytes + 1); }

struct Decoder {
  __m256 tables[4];
  __m256i controls[4], shifts, signMask;

  explicit Decoder(const float* magnitudes) {
    for (int t = 0; t < 4; ++t) tables[t] = _mm256_loadu_ps(magnitudes + 8 * t);
    // Vector q (elements 8q..8q+7) holds groups 2q and 2q+1, one per lane; vectors 0-1 read the
    // 16 bytes at 0, vectors 2-3 those at 8 (so group g >= 4 starts at byte 3g - 8).
    alignas(32) int8_t bytes[4][32];
    for (int q = 0; q < 4; ++q) {
      for (int lane = 0; lane < 2; ++lane) {
        const int group = 2 * q + lane, start = group < 4 ? 3 * group : 3 * group - 8;
        for (int d = 0; d < 4; ++d) {
          for (int b = 0; b < 4; ++b) bytes[q][lane * 16 + d * 4 + b] = static_cast<int8_t>(b == 3 ? -128 : start + b);
        }
      }
      controls[q] = _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes[q]));
    }
    shifts = _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
    signMask = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  }

  // Elements 8q..8q+7 of the block at `block`.
  [[gnu::always_inline]] inline __m256 decode(const std::byte* block, int q) const {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + (q < 2 ? 0 : 8)));
    const __m256i source = _mm256_broadcastsi128_si256(raw);
    const __m256i codes = _mm256_srlv_epi32(_mm256_shuffle_epi8(source, controls[q]), shifts);
    const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28));
    const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(codes, 27));
    const __m256 low = _mm256_blendv_ps(_mm256_permutevar8x32_ps(tables[0], codes),
                                        _mm256_permutevar8x32_ps(tables[1], codes), bit3);
    const __m256 high = _mm256_blendv_ps(_mm256_permutevar8x32_ps(tables[2], codes),
                                         _mm256_permutevar8x32_ps(tables[3], codes), bit3);
    const __m256 magnitude = _mm256_blendv_ps(low, high, bit4);
    const __m256 sign = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(codes, 26), signMask));
    return _mm256_or_ps(magnitude, sign);
  }
};

// The first `count` (0..8) floats at p, zeros after: x past K is never read.
__m256 loadPartial(const float* p, int64_t count) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lanes);
  return _mm256_maskload_ps(p, mask);
}

float horizontalSum(__m256 v) {
  const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

template <int M>
void gemvRows(const MxJob& job, int64_t n0, int64_t n1) {
  const Decoder decoder(job.magnitudes);
  const int64_t k = job.k, blocks = blocksOf(k);
  for (int64_t n = n0; n < n1; ++n) {
    const std::byte* column = job.weights + n * columnStride(k);
    const auto* scales = reinterpret_cast<const uint8_t*>(column + blocks * kPackedBytes);
    __m256 acc[M][2];
    for (int r = 0; r < M; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const std::byte* block = column + b * kPackedBytes;
      const __m256 scale = _mm256_set1_ps(job.scales[scales[b]]);
      const int64_t first = b * kElements;
      const bool whole = first + kElements <= k;
      for (int q = 0; q < 4; ++q) {
        const __m256 w = _mm256_mul_ps(decoder.decode(block, q), scale);
        for (int r = 0; r < M; ++r) {
          const float* x = job.x + r * k + first + 8 * q;
          const __m256 xv = whole ? _mm256_loadu_ps(x) : loadPartial(x, std::clamp<int64_t>(k - first - 8 * q, 0, 8));
          acc[r][q & 1] = _mm256_fmadd_ps(w, xv, acc[r][q & 1]);
        }
      }
    }
    for (int r = 0; r < M; ++r) job.y[r * job.n + n] = job.alpha * horizontalSum(_mm256_add_ps(acc[r][0], acc[r][1]));
  }
}

template <int R, int C>
void panelTile(const MxJob& job, const float* panel, int64_t stride, int64_t row, int64_t n) {
  const int64_t k = job.k;
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t i = 0; i < k; i += 8) {
    __m256 w[C];
    for (int c = 0; c < C; ++c) w[c] = _mm256_loadu_ps(panel + c * stride + i);  // zeros past k
    for (int r = 0; r < R; ++r) {
      const float* x = job.x + (row + r) * k + i;
      const __m256 xv = i + 8 <= k ? _mm256_loadu_ps(x) : loadPartial(x, k - i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, w[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) job.y[(row + r) * job.n + n + c] = job.alpha * horizontalSum(acc[r][c]);
}

template <int R>
void panelRows(const MxJob& job, const float* panel, int64_t stride, int64_t row, int64_t n, int64_t columns) {
  int64_t c = 0;
  for (; c + 3 <= columns; c += 3) panelTile<R, 3>(job, panel + c * stride, stride, row, n + c);
  switch (columns - c) {
    case 2: panelTile<R, 2>(job, panel + c * stride, stride, row, n + c); break;
    case 1: panelTile<R, 1>(job, panel + c * stride, stride, row, n + c); break;
    default: break;
  }
}

}  // namespace

void gemvAvx2(const MxJob& job, int64_t n0, int64_t n1) {
  switch (job.m) {
    case 1: gemvRows<1>(job, n0, n1); break;
    case 2: gemvRows<2>(job, n0, n1); break;
    case 3: gemvRows<3>(job, n0, n1); break;
    case 4: gemvRows<4>(job, n0, n1); break;
    default: break;
  }
}

void panelAvx2(const MxJob& job, int64_t n0, int64_t n1, float* panel) {
  const Decoder decoder(job.magnitudes);
  const int64_t blocks = blocksOf(job.k), stride = blocks * kElements;
  for (int64_t n = n0; n < n1; n += kPanel) {
    const int64_t columns = std::min<int64_t>(kPanel, n1 - n);
    for (int64_t c = 0; c < columns; ++c) {
      const std::byte* column = job.weights + (n + c) * columnStride(job.k);
      const auto* scales = reinterpret_cast<const uint8_t*>(column + blocks * kPackedBytes);
      for (int64_t b = 0; b < blocks; ++b) {
        const __m256 scale = _mm256_set1_ps(job.scales[scales[b]]);
        for (int q = 0; q < 4; ++q) {
          _mm256_storeu_ps(panel + c * stride + b * kElements + 8 * q,
                           _mm256_mul_ps(decoder.decode(column + b * kPackedBytes, q), scale));
        }
      }
    }
    int64_t row = 0;
    for (; row + 4 <= job.m; row += 4) panelRows<4>(job, panel, stride, row, n, columns);
    switch (job.m - row) {
      case 3: panelRows<3>(job, panel, stride, row, n, columns); break;
      case 2: panelRows<2>(job, panel, stride, row, n, columns); break;
      case 1: panelRows<1>(job, panel, stride, row, n, columns); break;
      default: break;
    }
  }
}

}  // namespace qaic::kernels::mx::detail
