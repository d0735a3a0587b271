// SPDX-License-Identifier: Apache-2.0
// The shared MXINT8 block loops (Mxint8Blocks.hpp) inlined into one function per instruction set
// by function attributes: not -m flags on the file, so no inline function with external linkage
// is emitted for a wider set than its callers'; not target_clones, whose ifunc resolver crashes
// ThreadSanitizer binaries at load. AVX-512's encoders are in Mxint8Avx512.cpp.
#include "kernels/mx/Mxint8Kernels.hpp"

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
[[gnu::target("avx2,f16c")]] void encodeHalvesAvx2(const uint16_t* halves, std::size_t count, std::byte* out) {
  encodeHalvesPass(halves, count, out);
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
