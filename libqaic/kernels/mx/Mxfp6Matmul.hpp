// SPDX-License-Identifier: Apache-2.0
// y[M, N] = alpha * x[M, K] . W[K, N] with W in the MXFP6 storage of Mxfp6Format.hpp, read in
// place: each block is dequantized in registers (small M) or a bounded panel of columns at a
// time into a thread-local buffer (large M), never the whole weight. Compute is float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/mx/MxPath.hpp"
#include "kernels/mx/Mxfp6Format.hpp"

namespace qaic::kernels::mx {

// MxPath (MxPath.hpp): Auto picks the best the CPU has (AVX-512 with VBMI, else AVX-512, else
// AVX2 with FMA, else scalar); a forced path the CPU lacks throws MxFormatError. Avx512Vbmi
// differs from Avx512 in the fused kernel (m <= kGemvMaxRows) only.
bool mxAvx2Available();        // AVX2 and FMA enabled by the OS
bool mxAvx512Available();      // AVX-512 F/BW/VL/DQ enabled by the OS
bool mxAvx512VbmiAvailable();  // and AVX-512 VBMI

struct Mxfp6Matrix {
  ElementFormat format = ElementFormat::E2M3;
  std::span<const std::byte> bytes;  // encodedBytes(k, n)
  int64_t k = 0, n = 0;
};

// Rows with this many rows or fewer run the fused dequantize-dot kernel (decode: one token per
// sequence); more rows dequantize a panel of kPanelColumns columns at a time and multiply it.
inline constexpr int64_t kGemvMaxRows = 4;
inline constexpr int64_t kPanelColumns = 16;

// x: m rows of k floats (row stride k); y: m rows of n floats (row stride n). The columns are
// split over `threads` OpenMP threads. Throws MxFormatError for a size mismatch.
void mxfp6Matmul(const Mxfp6Matrix& w, const float* x, int64_t m, float* y, float alpha = 1.0f, int threads = 1,
                 MxPath path = MxPath::Auto);

}  // namespace qaic::kernels::mx
