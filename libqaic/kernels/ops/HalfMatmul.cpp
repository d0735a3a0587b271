// SPDX-License-Identifier: Apache-2.0
#include "kernels/ops/HalfMatmul.hpp"

#include <stdexcept>

#include "kernels/format/DwhcTilesAvx512.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels::ops {
namespace {

// B row r (of k, or of n when transposed), null for a row of zeros.
const uint16_t* rowOf(const HalfProduct& p, int64_t r) {
  return p.rows != nullptr ? p.rows[r] : p.b + r * (p.bTransposed ? p.k : p.n);
}

void halfColumnsScalar(const HalfProduct& p, int64_t n0, int64_t n1) {
  for (int64_t i = 0; i < p.m; ++i) {
    const float* a = p.a + i * p.k;
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      if (p.bTransposed) {
        if (const uint16_t* row = rowOf(p, j))
          for (int64_t q = 0; q < p.k; ++q) sum += a[q] * halfToFloat(row[q]);
      } else {
        for (int64_t q = 0; q < p.k; ++q)
          if (const uint16_t* row = rowOf(p, q)) sum += a[q] * halfToFloat(row[j]);
      }
      p.d[i * p.n + j] = sum;
    }
  }
}

}  // namespace

bool halfAvx512Available() {
  static const bool has = format::cpuHasAvx512() && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
  return has;
}

void halfMatmulColumns(const HalfProduct& p, int64_t n0, int64_t n1, HalfPath path) {
  if (path == HalfPath::Auto) path = halfAvx512Available() ? HalfPath::Avx512 : HalfPath::Scalar;
  if (path == HalfPath::Avx512) {
    if (!halfAvx512Available()) throw std::runtime_error("float16 matmul: this CPU lacks AVX-512 with F16C and FMA");
    return detail::halfColumnsAvx512(p, n0, n1);
  }
  halfColumnsScalar(p, n0, n1);
}

}  // namespace qaic::kernels::ops
