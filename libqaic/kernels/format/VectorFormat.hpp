// The F16C/AVX2 device-format conversions (compiled with -mf16c -mavx2 in their own file and
// only called after a runtime CPU check). Each returns false for a combination it does not
// cover; the caller then uses the scalar path. Arguments are already validated.
#pragma once

#include <cstddef>

#include "kernels/DeviceFormat.hpp"

namespace qaic::kernels::format {

// Defined in a file built without -mavx2, so the check itself runs on any x86-64 CPU.
bool cpuHasF16cAvx2();

bool userToDeviceVector(const DeviceGeometry& g, ir::DeviceLayout layout, ir::UserLayout userLayout,
                        ir::DType userType, const std::byte* user, ir::DType deviceType,
                        std::byte* device);
bool deviceToUserVector(const DeviceGeometry& g, ir::DeviceLayout layout, ir::DType deviceType,
                        const std::byte* device, ir::UserLayout userLayout, ir::DType userType,
                        std::byte* user);

}  // namespace qaic::kernels::format
