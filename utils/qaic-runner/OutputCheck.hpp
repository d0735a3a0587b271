// SPDX-License-Identifier: Apache-2.0
// -c: an output compared with its reference file. Integers must match exactly; float and float16
// within |got - want| <= kAbsoluteTolerance + kRelativeTolerance * |want|.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <qaic/Types.hpp>

namespace qaic::runner {

inline constexpr double kAbsoluteTolerance = 1e-5;
inline constexpr double kRelativeTolerance = 1e-3;

struct Mismatch {
  std::size_t index = 0;  // element index of the first difference
  std::string expected;
  std::string actual;
};

// nullopt when equal within tolerance. Sizes must already agree (the caller reports that).
std::optional<Mismatch> compareOutput(qaic::rt::QAicBufferDataTypeEnum type, std::span<const uint8_t> expected,
                                      std::span<const uint8_t> actual);

}  // namespace qaic::runner
