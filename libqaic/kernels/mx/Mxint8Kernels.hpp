// SPDX-License-Identifier: Apache-2.0
// The compiled bodies behind encodeMxint8, decodeMxint8 and accumulateMxint8, one table per
// instruction set (Mxint8Kernels.cpp: one source compiled under each target); Mxint8Format.cpp
// picks the table. Declarations only; arguments arrive checked.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qaic::kernels::mx::detail {

struct Mxint8Kernels {
  void (*encodeFloats)(const float* values, std::size_t count, std::byte* out);
  void (*encodeHalves)(const uint16_t* halves, std::size_t count, std::byte* out);
  void (*decode)(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out);
  void (*accumulate)(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out);
};

// Baseline x86-64 (SSE2) runs anywhere; the others only where cpuHasF16cAvx2() / cpuHasAvx512().
extern const Mxint8Kernels kMxint8Baseline;
extern const Mxint8Kernels kMxint8Avx2;
extern const Mxint8Kernels kMxint8Avx512;

// AVX-512's encoders, by intrinsics (Mxint8Avx512.cpp): gcc's vectorization of the shared loops
// reduces and narrows a block in twice the instructions.
void encodeFloatsAvx512(const float* values, std::size_t count, std::byte* out);
void encodeHalvesAvx512(const uint16_t* halves, std::size_t count, std::byte* out);

}  // namespace qaic::kernels::mx::detail
