// SPDX-License-Identifier: Apache-2.0
// The F16C/AVX2 device-format conversions (compiled with -mf16c -mavx2 in their own file and
// only called after a runtime CPU check). Each returns false for a combination it does not
// cover; the caller then uses the scalar path. Arguments are already validated.
#pragma once

#include <cstddef>

#include "kernels/format/DeviceFormat.hpp"

namespace qaic::kernels::format {

// Defined in a file built without -mavx2, so the check itself runs on any x86-64 CPU.
bool cpuHasF16cAvx2();

// Which kernel family may run; the caller has checked that the CPU has it.
enum class VectorKernels {
  Avx2,    // F16C/AVX2 only
  Best,    // AVX-512 for the cases where it was measured faster (the CPU has AVX-512), else AVX2
  Avx512,  // AVX-512 wherever a kernel exists (the CPU has AVX-512), else AVX2
};

bool userToDeviceVector(const DeviceGeometry& g, ir::DeviceLayout layout, ir::UserLayout userLayout, ir::DType userType,
                        const std::byte* user, ir::DType deviceType, std::byte* device, VectorKernels kernels);
bool deviceToUserVector(const DeviceGeometry& g, ir::DeviceLayout layout, ir::DType deviceType, const std::byte* device,
                        ir::UserLayout userLayout, ir::DType userType, std::byte* user, VectorKernels kernels);

}  // namespace qaic::kernels::format
