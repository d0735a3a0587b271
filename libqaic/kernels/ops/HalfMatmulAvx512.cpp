// SPDX-License-Identifier: Apache-2.0
// The AVX-512 path of HalfMatmul.hpp (built with the AVX-512, F16C and FMA flags; called only
// after halfAvx512Available()). Up to four rows of `a` share each widened vector of B.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h "undefined" vectors (see format/Avx512Common.hpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <vector>

#include "kernels/ops/HalfMatmul.hpp"

namespace qaic::kernels::ops::detail {
namespace {

// B row r (of k, or of n when transposed), null for a row of zeros.
const uint16_t* rowOf(const HalfProduct& p, int64_t r) {
  return p.rows != nullptr ? p.rows[r] : p.b + r * (p.bTransposed ? p.k : p.n);
}

constexpr int kRows = 4;  // rows of a per pass: 4 x 4 accumulators and 4 widened B vectors

struct PresentRow {
  int64_t index;         // q: the column of a it is scaled by
  const uint16_t* data;  // B row q
};

__mmask16 tailMask(int64_t count) { return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1); }

__m512 widen(const uint16_t* p, __mmask16 mask) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p)); }

// B transposed: d[i, j] = dot(a row i, B row j); rows of B are contiguous, k long. J rows of B
// at a time, so that even one row of a has J independent chains of multiply-adds.
template <int R>
void dotRow(const HalfProduct& p, int64_t i0, int64_t j) {
  const uint16_t* row = rowOf(p, j);
  if (row == nullptr) {  // a row of zeros
    for (int r = 0; r < R; ++r) p.d[(i0 + r) * p.n + j] = 0.0f;
    return;
  }
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t q = 0; q < p.k; q += 16) {
    const __mmask16 mask = tailMask(p.k - q);
    const __m512 w = widen(row + q, mask);
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p.a + (i0 + r) * p.k + q), w, acc[r]);
  }
  for (int r = 0; r < R; ++r) p.d[(i0 + r) * p.n + j] = _mm512_reduce_add_ps(acc[r]);
}

template <int R>
void dotRows(const HalfProduct& p, int64_t i0, int64_t n0, int64_t n1) {
  constexpr int J = R >= 3 ? 2 : 4;
  int64_t j = n0;
  for (; j + J <= n1; j += J) {
    const uint16_t* rows[J];
    bool whole = true;
    for (int c = 0; c < J; ++c) whole = (rows[c] = rowOf(p, j + c)) != nullptr && whole;
    if (!whole) {
      for (int c = 0; c < J; ++c) dotRow<R>(p, i0, j + c);
      continue;
    }
    __m512 acc[R][J];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < J; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t q = 0; q < p.k; q += 16) {
      const __mmask16 mask = tailMask(p.k - q);
      __m512 w[J];
      for (int c = 0; c < J; ++c) w[c] = widen(rows[c] + q, mask);
      for (int r = 0; r < R; ++r) {
        const __m512 x = _mm512_maskz_loadu_ps(mask, p.a + (i0 + r) * p.k + q);
        for (int c = 0; c < J; ++c) acc[r][c] = _mm512_fmadd_ps(x, w[c], acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < J; ++c) p.d[(i0 + r) * p.n + j + c] = _mm512_reduce_add_ps(acc[r][c]);
  }
  for (; j < n1; ++j) dotRow<R>(p, i0, j);
}

// B as [k, n]: d[i, j0..j0+64) = sum over q of a[i, q] * B row q, four vectors of columns at a
// time, the last ones masked; `present` lists the rows that are not zeros. With one or two rows
// of a, alternate rows sum apart (two chains per vector instead of one), added at the end.
template <int R>
void axpyRows(const HalfProduct& p, const std::vector<PresentRow>& present, int64_t i0, int64_t n0, int64_t n1) {
  constexpr int kVectors = 4;
  constexpr int U = R <= 2 ? 2 : 1;
  const auto count = static_cast<int64_t>(present.size());
  for (int64_t j0 = n0; j0 < n1; j0 += 16 * kVectors) {
    __mmask16 mask[kVectors];
    for (int v = 0; v < kVectors; ++v) mask[v] = j0 + 16 * v < n1 ? tailMask(n1 - j0 - 16 * v) : __mmask16(0);
    __m512 acc[U][R][kVectors];
    for (int u = 0; u < U; ++u)
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < kVectors; ++v) acc[u][r][v] = _mm512_setzero_ps();
    auto step = [&](int u, const PresentRow& row) {
      const uint16_t* b = row.data + j0;
      __m512 w[kVectors];
      for (int v = 0; v < kVectors; ++v) w[v] = widen(b + 16 * v, mask[v]);
      for (int r = 0; r < R; ++r) {
        const __m512 x = _mm512_set1_ps(p.a[(i0 + r) * p.k + row.index]);
        for (int v = 0; v < kVectors; ++v) acc[u][r][v] = _mm512_fmadd_ps(x, w[v], acc[u][r][v]);
      }
    };
    int64_t e = 0;
    for (; e + U <= count; e += U)
      for (int u = 0; u < U; ++u) step(u, present[static_cast<std::size_t>(e + u)]);
    for (; e < count; ++e) step(0, present[static_cast<std::size_t>(e)]);
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < kVectors; ++v) {
        __m512 sum = acc[0][r][v];
        for (int u = 1; u < U; ++u) sum = _mm512_add_ps(sum, acc[u][r][v]);
        _mm512_mask_storeu_ps(p.d + (i0 + r) * p.n + j0 + 16 * v, mask[v], sum);
      }
  }
}

template <int R>
void rows(const HalfProduct& p, const std::vector<PresentRow>& present, int64_t i0, int64_t n0, int64_t n1) {
  if (p.bTransposed)
    dotRows<R>(p, i0, n0, n1);
  else
    axpyRows<R>(p, present, i0, n0, n1);
}

}  // namespace

void halfColumnsAvx512(const HalfProduct& p, int64_t n0, int64_t n1) {
  // The rows of B the product adds (B as [k, n]); a transposed B is read row by row instead.
  thread_local std::vector<PresentRow> present;
  present.clear();
  if (!p.bTransposed)
    for (int64_t q = 0; q < p.k; ++q)
      if (const uint16_t* row = rowOf(p, q)) present.push_back({q, row});
  int64_t i = 0;
  for (; i + kRows <= p.m; i += kRows) rows<kRows>(p, present, i, n0, n1);
  switch (p.m - i) {
    case 3: return rows<3>(p, present, i, n0, n1);
    case 2: return rows<2>(p, present, i, n0, n1);
    case 1: return rows<1>(p, present, i, n0, n1);
    default: return;
  }
}

}  // namespace qaic::kernels::ops::detail
