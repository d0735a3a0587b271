// SPDX-License-Identifier: Apache-2.0
#include "kernels/mx/Mxint8Format.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/format/DwhcTilesAvx512.hpp"  // cpuHasAvx512
#include "kernels/format/VectorFormat.hpp"
#include "kernels/mx/E8m0.hpp"
#include "kernels/mx/Mxint8Kernels.hpp"

namespace qaic::kernels::mx {
namespace {

const detail::Mxint8Kernels& kernelsFor(MxPath path) {
  if (path != MxPath::Auto && !mxint8PathAvailable(path)) {
    throw std::invalid_argument(std::string("MXINT8 path ") + mxPathName(path) +
                                (path == MxPath::Avx512Vbmi
                                     ? " forced, but MXINT8 has no body of that path"
                                     : " forced, but this CPU (or its OS) does not offer that instruction set"));
  }
  switch (path) {
    case MxPath::Auto:
    case MxPath::Avx512Vbmi: break;  // refused above
    case MxPath::Scalar: return detail::kMxint8Baseline;
    case MxPath::Avx2: return detail::kMxint8Avx2;
    case MxPath::Avx512: return detail::kMxint8Avx512;
  }
  static const detail::Mxint8Kernels& best = format::cpuHasAvx512()     ? detail::kMxint8Avx512
                                             : format::cpuHasF16cAvx2() ? detail::kMxint8Avx2
                                                                        : detail::kMxint8Baseline;
  return best;
}

}  // namespace

uint8_t mxint8ScaleCode(float amax) {
  if (amax == 0) return 0;
  return e8m0Code(std::ilogb(amax));  // the element type's largest power of two is 2^0
}

int8_t mxint8ElementCode(float value, uint8_t scaleCode) {
  // In double the division by the scale and the 2^6 are exact for every scale code.
  const double scaled = std::ldexp(double{value}, kE8m0Bias - kMxint8ElementExponent - int{scaleCode});
  return static_cast<int8_t>(std::clamp(std::nearbyint(scaled), double{-kMxint8MaxCode}, double{kMxint8MaxCode}));
}

float mxint8Value(int8_t code, uint8_t scaleCode) {
  if (scaleCode == kE8m0Nan) return NAN;
  return static_cast<float>(code) * std::ldexp(1.0f, int{scaleCode} - kE8m0Bias + kMxint8ElementExponent);
}

bool mxint8PathAvailable(MxPath path) {
  switch (path) {
    case MxPath::Auto:
    case MxPath::Scalar: return true;
    case MxPath::Avx2: return format::cpuHasF16cAvx2();
    case MxPath::Avx512: return format::cpuHasAvx512();
    case MxPath::Avx512Vbmi: return false;
  }
  return false;
}

void encodeMxint8(const float* values, std::size_t count, std::byte* out, MxPath path) {
  kernelsFor(path).encodeFloats(values, count, out);
}

void encodeMxint8(const uint16_t* halves, std::size_t count, std::byte* out, MxPath path) {
  kernelsFor(path).encodeHalves(halves, count, out);
}

void decodeMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out,
                  MxPath path) {
  kernelsFor(path).decode(encoded, count, begin, end, out);
}

void accumulateMxint8(const std::byte* encoded, std::size_t count, std::size_t begin, std::size_t end, float* out,
                      MxPath path) {
  kernelsFor(path).accumulate(encoded, count, begin, end, out);
}

}  // namespace qaic::kernels::mx
