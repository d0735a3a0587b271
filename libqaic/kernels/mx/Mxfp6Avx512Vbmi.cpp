// SPDX-License-Identifier: Apache-2.0
// The MXFP6 GEMV on CPUs with AVX-512 VBMI (built with it; called only after
// mxAvx512VbmiAvailable()). Every FP6 element (E2M3 or E3M2) has at most 4 significant bits, so
// its value is exact in bfloat16, the upper half of a float32. Two blocks' 64 codes decode in a
// few byte operations: vpermb gathers each 8 codes' 6 bytes into a qword, vpmultishiftqb moves
// each code into a byte of its own, and vpermt2w looks the 6-bit codes (magnitude and sign) up in
// a 64-entry bfloat16 table. A dword of two bfloat16 values then gives two float32 lanes with one
// operation each (shift left, or mask), so lane t holds elements 2t and 2t + 1 of the block; x is
// reordered once per product to match (prepareVbmi). Products and sums are float32 as on the
// other paths; the block's scale multiplies its partial sum.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's avx512fintrin.h (see Avx512Common.hpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/mx/Mxfp6Kernels.hpp"

namespace qaic::kernels::mx::detail {
namespace {

// Local copies of the layout arithmetic (Mxfp6Format.hpp): no inline function with external
// linkage is compiled with this file's instruction set.
constexpr int64_t kBlockElements = 32, kBlockBytes = 24;
int64_t blocksPerColumn(int64_t k) { return (k + kBlockElements - 1) / kBlockElements; }
int64_t columnBytes(int64_t k) { return blocksPerColumn(k) * (kBlockBytes + 1); }

uint16_t bfloat16Bits(float value) {  // exact for the element values (at most 4 significant bits)
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

struct Decoder {
  __m512i arrange, shifts, lowTable, highTable, upperHalves;

  explicit Decoder(const float* magnitudes) {
    alignas(64) uint8_t arrangeBytes[64], shiftBytes[64];
    for (int q = 0; q < 8; ++q) {
      for (int b = 0; b < 8; ++b) {
        arrangeBytes[8 * q + b] = static_cast<uint8_t>(6 * q + b);  // bytes 6q.. hold codes 8q..8q+7
        shiftBytes[8 * q + b] = static_cast<uint8_t>(6 * b);        // code b of the qword at bit 6b
      }
    }
    alignas(64) uint16_t table[64];
    for (int code = 0; code < 32; ++code) {
      table[code] = bfloat16Bits(magnitudes[code]);
      table[32 + code] = bfloat16Bits(-magnitudes[code]);
    }
    arrange = _mm512_load_si512(arrangeBytes);
    shifts = _mm512_load_si512(shiftBytes);
    lowTable = _mm512_load_si512(table);
    highTable = _mm512_load_si512(table + 32);
    upperHalves = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  }

  // Two blocks' codes (48 bytes; a mask of 24 reads only the first block) as 32 + 32 bfloat16.
  [[gnu::always_inline]] inline void decode(const std::byte* source, __mmask64 bytes, __m512i& first,
                                            __m512i& second) const {
    const __m512i raw = _mm512_maskz_loadu_epi8(bytes, source);
    const __m512i codes = _mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(arrange, raw));
    first = _mm512_permutex2var_epi16(lowTable, _mm512_cvtepu8_epi16(_mm512_castsi512_si256(codes)), highTable);
    second = _mm512_permutex2var_epi16(lowTable, _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(codes, 1)), highTable);
  }

  // One block's 32 bfloat16 elements against its 32 reordered x values: the float32 dot product.
  [[gnu::always_inline]] inline __m512 dot(__m512i elements, const float* x) const {
    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(elements, 16));
    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(elements, upperHalves));
    return _mm512_fmadd_ps(odd, _mm512_loadu_ps(x + 16), _mm512_mul_ps(even, _mm512_loadu_ps(x)));
  }
};

template <int M>
void gemvRows(const MxJob& job, int64_t n0, int64_t n1) {
  const Decoder decoder(job.magnitudes);
  const int64_t k = job.k, blocks = blocksPerColumn(k), stride = vbmiStride(k);
  constexpr __mmask64 kPair = (__mmask64{1} << 48) - 1, kSingle = (__mmask64{1} << 24) - 1;
  for (int64_t n = n0; n < n1; ++n) {
    const std::byte* column = job.weights + n * columnBytes(k);
    const auto* scales = reinterpret_cast<const uint8_t*>(column + blocks * kBlockBytes);
    __m512 first[M], second[M];
    for (int r = 0; r < M; ++r) first[r] = second[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; b += 2) {
      const bool pair = b + 1 < blocks;
      __m512i low, high;
      decoder.decode(column + b * kBlockBytes, pair ? kPair : kSingle, low, high);
      const __m512 lowScale = _mm512_set1_ps(job.scales[scales[b]]);
      // A lone last block: the second half decodes zero bytes, against zeros of x, scaled by 0.
      const __m512 highScale = pair ? _mm512_set1_ps(job.scales[scales[b + 1]]) : _mm512_setzero_ps();
      for (int r = 0; r < M; ++r) {
        const float* x = job.xReordered + r * stride + b * kBlockElements;
        first[r] = _mm512_fmadd_ps(decoder.dot(low, x), lowScale, first[r]);
        second[r] = _mm512_fmadd_ps(decoder.dot(high, x + kBlockElements), highScale, second[r]);
      }
    }
    for (int r = 0; r < M; ++r)
      job.y[r * job.n + n] = job.alpha * _mm512_reduce_add_ps(_mm512_add_ps(first[r], second[r]));
  }
}

}  // namespace

int64_t vbmiStride(int64_t k) { return (blocksPerColumn(k) + 1) / 2 * 2 * kBlockElements; }

void reorderForVbmi(const float* x, int64_t m, int64_t k, float* reordered) {
  const int64_t stride = vbmiStride(k);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k;
    float* out = reordered + r * stride;
    for (int64_t block = 0; block < stride; block += kBlockElements) {
      for (int64_t t = 0; t < kBlockElements / 2; ++t) {
        const int64_t even = block + 2 * t, odd = even + 1;  // zeros past k meet the tail's codes
        out[block + t] = even < k ? row[even] : 0.0f;
        out[block + kBlockElements / 2 + t] = odd < k ? row[odd] : 0.0f;
      }
    }
  }
}

void gemvAvx512Vbmi(const MxJob& job, int64_t n0, int64_t n1) {
  switch (job.m) {
    case 1: gemvRows<1>(job, n0, n1); break;
    case 2: gemvRows<2>(job, n0, n1); break;
    case 3: gemvRows<3>(job, n0, n1); break;
    case 4: gemvRows<4>(job, n0, n1); break;
    default: break;
  }
}

}  // namespace qaic::kernels::mx::detail
