// SPDX-License-Identifier: Apache-2.0
// d[M, N] = a[M, K] . B with B float16 (a decoder's KV cache kept in its storage type), read
// where it lies and widened in registers: no float copy of B, and with B transposed ([N, K], the
// keys of attention's scores) no transposed copy either. Compute is float32 with fused
// multiply-adds, as the float matmul computes.
#pragma once

#include <cstdint>

namespace qaic::kernels::ops {

// Auto picks AVX-512 (with F16C and FMA) when the CPU has it, else the scalar loop; the others
// force one path (tests) and throw std::runtime_error when the CPU lacks it.
enum class HalfPath : uint8_t { Auto, Scalar, Avx512 };
bool halfAvx512Available();

struct HalfProduct {
  const float* a = nullptr;     // m rows of k floats
  const uint16_t* b = nullptr;  // [k, n] rows of n, or with bTransposed [n, k] rows of k
  float* d = nullptr;           // m rows of n floats
  int64_t m = 0, k = 0, n = 0;
  bool bTransposed = false;
  // Instead of `b`: B's rows where they lie (k of them, or n with bTransposed), a null row being
  // a row of zeros, which is skipped (matmul_gathered_b: a KV cache's filled positions only).
  // (No member functions: the vector path's file, built with other instruction sets, must not
  // share an inline function with the others.)
  const uint16_t* const* rows = nullptr;
};

// Columns [n0, n1) of d (the caller splits the columns, or the batches, over its threads).
void halfMatmulColumns(const HalfProduct& p, int64_t n0, int64_t n1, HalfPath path = HalfPath::Auto);

namespace detail {
void halfColumnsAvx512(const HalfProduct& p, int64_t n0, int64_t n1);
}

}  // namespace qaic::kernels::ops
