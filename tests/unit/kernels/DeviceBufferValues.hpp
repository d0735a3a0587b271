// SPDX-License-Identifier: Apache-2.0
// Test data for the device-format tests (DeviceFormatTest, DeviceFormatPathsTest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/format/DeviceFormat.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels::testing {

// A device buffer of `format` over `dims` whose element k holds values[k] (rounded to float16
// when that is the format's element type), whatever the layout: any device content will do.
inline std::vector<std::byte> deviceBufferHolding(const ir::Dims& dims, const ir::DeviceFormat& format,
                                                  const std::vector<float>& values) {
  std::vector<std::byte> device(deviceBufferBytes(dims, format));
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (format.elementType == ir::DType::Float16) {
      const uint16_t h = floatToHalf(values[k]);
      std::memcpy(device.data() + k * 2, &h, 2);
    } else {
      std::memcpy(device.data() + k * 4, &values[k], 4);
    }
  }
  return device;
}

}  // namespace qaic::kernels::testing
