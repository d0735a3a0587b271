// SPDX-License-Identifier: Apache-2.0
// Which compiled body an MX kernel runs: the MXFP6 matmul (Mxfp6Matmul.hpp) and the MXINT8 codec
// (Mxint8Format.hpp) each build one per instruction set. Auto takes the widest the CPU has; the
// others force one for tests and benchmarks, and a kernel throws when the CPU lacks the one
// forced. Each family says what its paths need and which it has.
#pragma once

#include <cstdint>

namespace qaic::kernels::mx {

enum class MxPath : uint8_t { Auto, Scalar, Avx2, Avx512, Avx512Vbmi };

inline const char* mxPathName(MxPath path) {
  switch (path) {
    case MxPath::Auto: return "Auto";
    case MxPath::Scalar: return "Scalar";
    case MxPath::Avx2: return "Avx2";
    case MxPath::Avx512: return "Avx512";
    case MxPath::Avx512Vbmi: return "Avx512Vbmi";
  }
  return "unknown";
}

}  // namespace qaic::kernels::mx
