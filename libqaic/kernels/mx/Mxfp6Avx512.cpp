// SPDX-License-Identifier: Apache-2.0
// The AVX-512 MX kernels (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq; called only
// after mxAvx512Available()). Sixteen codes unpack from 12 bytes broadcast to the four 128-bit
// lanes: vpshufb puts each element's 3-byte group in its dword, vpsrlvd moves its 6 bits down,
// vpermi2ps looks the low 5 bits up in the 32-entry magnitude table, and the sign bit is shifted
// to bit 31 and merged with one vpternlogd.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's avx512fintrin.h (see Avx512Common.hpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "kernels/mx/Mxfp6Kernels.hpp"

namespace qaic::kernels::mx::detail {
namespace {

// Local copies of the layout arithmetic (Mxfp6Format.hpp): no inline function with external
// linkage is compiled with this file's instruction set.
constexpr int64_t kBlockElements = 32, kBlockBytes = 24, kPanelColumns = 16;
int64_t blocksPerColumn(int64_t k) { return (k + kBlockElements - 1) / kBlockElements; }
int64_t columnBytes(int64_t k) { return blocksPerColumn(k) * (kBlockBytes + 1); }

struct Decoder {
  __m512 lowTable, highTable;
  __m512i firstControl, secondControl, shifts, signMask;

  explicit Decoder(const float* magnitudes) {
    lowTable = _mm512_loadu_ps(magnitudes);
    highTable = _mm512_loadu_ps(magnitudes + 16);
    // Lane L's dword d is element 4L + d: the bytes of group L (first half, loaded at byte 0)
    // or of group 4 + L (second half, loaded at byte 8, so its groups start at byte 4).
    alignas(64) int8_t first[64], second[64];
    for (int lane = 0; lane < 4; ++lane) {
      for (int d = 0; d < 4; ++d) {
        for (int b = 0; b < 4; ++b) {
          const int at = lane * 16 + d * 4 + b;
          first[at] = static_cast<int8_t>(b == 3 ? -128 : 3 * lane + b);
          second[at] = static_cast<int8_t>(b == 3 ? -128 : 4 + 3 * lane + b);
        }
      }
    }
    firstControl = _mm512_load_si512(first);
    secondControl = _mm512_load_si512(second);
    shifts = _mm512_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18);
    signMask = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  }

  [[gnu::always_inline]] inline __m512 decode(const std::byte* bytes, __m512i control) const {
    const __m512i source = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
    const __m512i codes = _mm512_srlv_epi32(_mm512_shuffle_epi8(source, control), shifts);
    const __m512 magnitude = _mm512_permutex2var_ps(lowTable, codes, highTable);
    const __m512i sign = _mm512_slli_epi32(codes, 26);
    // magnitude | (sign & signMask)
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(magnitude), sign, signMask, 0xF8));
  }
  // Elements 0..15 and 16..31 of a block.
  [[gnu::always_inline]] inline __m512 first(const std::byte* block) const { return decode(block, firstControl); }
  [[gnu::always_inline]] inline __m512 second(const std::byte* block) const { return decode(block + 8, secondControl); }
};

template <int M>
void gemvRows(const MxJob& job, int64_t n0, int64_t n1) {
  const Decoder decoder(job.magnitudes);
  const int64_t k = job.k, blocks = blocksPerColumn(k), fullBlocks = k / kBlockElements;
  const int64_t tail = k - fullBlocks * kBlockElements;
  const __mmask16 tailFirst = static_cast<__mmask16>(tail >= 16 ? 0xFFFF : (1u << tail) - 1);
  const __mmask16 tailSecond = static_cast<__mmask16>(tail <= 16 ? 0 : (1u << (tail - 16)) - 1);
  for (int64_t n = n0; n < n1; ++n) {
    const std::byte* column = job.weights + n * columnBytes(k);
    const auto* scales = reinterpret_cast<const uint8_t*>(column + blocks * kBlockBytes);
    __m512 first[M], second[M];
    for (int r = 0; r < M; ++r) first[r] = second[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < fullBlocks; ++b) {
      const std::byte* block = column + b * kBlockBytes;
      const __m512 scale = _mm512_set1_ps(job.scales[scales[b]]);
      if constexpr (M == 1) {
        // One row: the scale multiplies the block's partial sums (3 operations, not 4).
        const __m512 partial = _mm512_fmadd_ps(
            decoder.second(block), _mm512_loadu_ps(job.x + b * kBlockElements + 16),
            _mm512_mul_ps(decoder.first(block), _mm512_loadu_ps(job.x + b * kBlockElements)));
        first[0] = _mm512_fmadd_ps(partial, scale, first[0]);
      } else {
        const __m512 low = _mm512_mul_ps(decoder.first(block), scale);
        const __m512 high = _mm512_mul_ps(decoder.second(block), scale);
        for (int r = 0; r < M; ++r) {
          const float* x = job.x + r * k + b * kBlockElements;
          first[r] = _mm512_fmadd_ps(low, _mm512_loadu_ps(x), first[r]);
          second[r] = _mm512_fmadd_ps(high, _mm512_loadu_ps(x + 16), second[r]);
        }
      }
    }
    if (tail != 0) {  // x ends inside the block: masked loads read nothing past it
      const std::byte* block = column + fullBlocks * kBlockBytes;
      const __m512 scale = _mm512_set1_ps(job.scales[scales[fullBlocks]]);
      const __m512 low = _mm512_mul_ps(decoder.first(block), scale);
      const __m512 high = _mm512_mul_ps(decoder.second(block), scale);
      for (int r = 0; r < M; ++r) {
        const float* x = job.x + r * k + fullBlocks * kBlockElements;
        first[r] = _mm512_fmadd_ps(low, _mm512_maskz_loadu_ps(tailFirst, x), first[r]);
        second[r] = _mm512_fmadd_ps(high, _mm512_maskz_loadu_ps(tailSecond, x + 16), second[r]);
      }
    }
    for (int r = 0; r < M; ++r)
      job.y[r * job.n + n] = job.alpha * _mm512_reduce_add_ps(_mm512_add_ps(first[r], second[r]));
  }
}

// R rows by C panel columns, each output a dot product of length k.
template <int R, int C>
void panelTile(const MxJob& job, const float* panel, int64_t stride, int64_t row, int64_t n) {
  const int64_t k = job.k, full = k / 16 * 16;
  const __mmask16 tailMask = static_cast<__mmask16>((1u << (k - full)) - 1);
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 mask = i < full ? static_cast<__mmask16>(0xFFFF) : tailMask;
    __m512 w[C];
    for (int c = 0; c < C; ++c) w[c] = _mm512_loadu_ps(panel + c * stride + i);  // zeros past k
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_maskz_loadu_ps(mask, job.x + (row + r) * k + i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(x, w[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) job.y[(row + r) * job.n + n + c] = job.alpha * _mm512_reduce_add_ps(acc[r][c]);
}

template <int R>
void panelRows(const MxJob& job, const float* panel, int64_t stride, int64_t row, int64_t n, int64_t columns) {
  int64_t c = 0;
  for (; c + 4 <= columns; c += 4) panelTile<R, 4>(job, panel + c * stride, stride, row, n + c);
  switch (columns - c) {
    case 3: panelTile<R, 3>(job, panel + c * stride, stride, row, n + c); break;
    case 2: panelTile<R, 2>(job, panel + c * stride, stride, row, n + c); break;
    case 1: panelTile<R, 1>(job, panel + c * stride, stride, row, n + c); break;
    default: break;
  }
}

}  // namespace

void gemvAvx512(const MxJob& job, int64_t n0, int64_t n1) {
  switch (job.m) {
    case 1: gemvRows<1>(job, n0, n1); break;
    case 2: gemvRows<2>(job, n0, n1); break;
    case 3: gemvRows<3>(job, n0, n1); break;
    case 4: gemvRows<4>(job, n0, n1); break;
    default: break;
  }
}

void panelAvx512(const MxJob& job, int64_t n0, int64_t n1, float* panel) {
  const Decoder decoder(job.magnitudes);
  const int64_t blocks = blocksPerColumn(job.k), stride = blocks * kBlockElements;
  for (int64_t n = n0; n < n1; n += kPanelColumns) {
    const int64_t columns = std::min<int64_t>(kPanelColumns, n1 - n);
    for (int64_t c = 0; c < columns; ++c) {
      const std::byte* column = job.weights + (n + c) * columnBytes(job.k);
      const auto* scales = reinterpret_cast<const uint8_t*>(column + blocks * kBlockBytes);
      float* out = panel + c * stride;
      for (int64_t b = 0; b < blocks; ++b) {
        const __m512 scale = _mm512_set1_ps(job.scales[scales[b]]);
        _mm512_storeu_ps(out + b * 32, _mm512_mul_ps(decoder.first(column + b * kBlockBytes), scale));
        _mm512_storeu_ps(out + b * 32 + 16, _mm512_mul_ps(decoder.second(column + b * kBlockBytes), scale));
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
