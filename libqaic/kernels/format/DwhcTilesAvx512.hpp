// SPDX-License-Identifier: Apache-2.0
// The AVX-512 kernel between a float NCHW user buffer and a DWHC device buffer (float16 or
// float elements). Compiled with -mavx512f/bw/vl/dq in its own file (see CMakeLists.txt) and only
// called after cpuHasAvx512(); arguments are already validated.
#pragma once

#include "kernels/format/PlanarKernels.hpp"

namespace qaic::kernels::format {

// Defined in a file built without AVX-512 flags, so the check itself runs on any x86-64 CPU.
// True when the CPU has AVX-512 F, BW, VL and DQ and the OS saves the ZMM and mask registers.
bool cpuHasAvx512();

// A whole DWHC tensor (job.layout must be DWHC, any H and W): 16 x 16 tiles, every edge by
// masked tiles of the same kernel; with H and W multiples of 8 but not both of 16, 8 x 8 tiles
// two per vector instead (the AVX2 kernel's for tensors from DRAM read into user rows). Cached
// tensors read into user rows go by the sweeps of DwhcSweepsAvx512.cpp.
void dwhcTilesAvx512(const PlanarJob& job);

}  // namespace qaic::kernels::format
