// SPDX-License-Identifier: Apache-2.0
// The shared MXINT8 block loops (Mxint8Blocks.hpp) inlined into one function per instruction set
// by function attributes: not -m flags on the file, so no inline function with external linkage
// is emitted for a wider set than its callers'; not target_clones, whose ifunc resolver crashes
// ThreadSanitizer binaries at load. AVX-512's encoders are in Mxint8Avx512.cpp.
#include "kernels/mx/Mxint8Kernels.hpp"

#include <immintrin.h>

#include "kernels/mx/Mxint8Blocks.hpp"

namespace qaic::kernels::mx::detail {
namespace {

void encodeFloatsBaseline(const float* values, std::size_t count, std::byte* out) {
  encodeFloatsPass(values, count, out);
}
void encodeHalvesBaseline(const uint16_t* halves, std::size_t count, std::byte* out) {
  encodeHalvesPass(halves, count, out);
}
void decodeBaseline(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out) {
  decodePass<false>(encoded, count, begin, end, out);
}
void accumulateBaseline(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out) {
  decodePass<true>(encoded, count, begin, end, out);
}

[[gnu::target("avx2,f16c")]] void encodeFloatsAvx2(const float* values, std::size_t count, std::byte* out) {
  encodeFloatsPass(values, count, out);
}
// F16C widens eight float16 per instruction (vcvtph2ps, exact), and the float block then encodes
// as floats do.
[[gnu::target("avx2,f16c")]] void encodeHalvesAvx2(const uint16_t* halves, std::size_t count, std::byte* out) {
  auto* codes = reinterpret_cast<int8_t*>(out);
  std::byte* scales = out + count;
  alignas(32) float block[kMxint8BlockElements];
  const std::size_t fullBlocks = count / kMxint8BlockElements;
  for (std::size_t b = 0; b < fullBlocks; ++b) {
    const std::size_t first = b * kMxint8BlockElements;
    for (std::size_t i = 0; i < kMxint8BlockElements; i += 8) {
      const __m128i eight = _mm_loadu_si128(reinterpret_cast<const __m128i*>(halves + first + i));
      _mm256_store_ps(block + i, _mm256_cvtph_ps(eight));
    }
    encodeBlock(block, FullBlock{}, codes + first, scales + b);
  }
  const std::size_t first = fullBlocks * kMxint8BlockElements;
  if (first < count) encodeHalvesBlock(halves + first, count - first, codes + first, scales + fullBlocks);
}
[[gnu::target("avx2,f16c")]] void decodeAvx2(const std::byte* encoded, std::size_t count, std::size_t begin,
                                             std::size_t end, float* out) {
  decodePass<false>(encoded, count, begin, end, out);
}
[[gnu::target("avx2,f16c")]] void accumulateAvx2(const std::byte* encoded, std::size_t count, std::size_t begin,
                                                 std::size_t end, float* out) {
  decodePass<true>(encoded, count, begin, end, out);
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void decodeAvx512(const std::byte* encoded, std::size_t count,
                                                                        std::size_t begin, std::size_t end,
                                                                        float* out) {
  decodePass<false>(encoded, count, begin, end, out);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void accumulateAvx512(const std::byte* encoded, std::size_t count,
                                                                            std::size_t begin, std::size_t end,
                                                                            float* out) {
  decodePass<true>(encoded, count, begin, end, out);
}

}  // namespace

const Mxint8Kernels kMxint8Baseline{encodeFloatsBaseline, encodeHalvesBaseline, decodeBaseline, accumulateBaseline};
const Mxint8Kernels kMxint8Avx2{encodeFloatsAvx2, encodeHalvesAvx2, decodeAvx2, accumulateAvx2};
const Mxint8Kernels kMxint8Avx512{encodeFloatsAvx512, encodeHalvesAvx512, decodeAvx512, accumulateAvx512};

}  // namespace qaic::kernels::mx::detail
