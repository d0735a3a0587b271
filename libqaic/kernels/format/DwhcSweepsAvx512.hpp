// SPDX-License-Identifier: Apache-2.0
// The AVX-512 sweeps reading cached DWHC tensors into NCHW float user rows
// (DwhcSweepsAvx512.cpp, built with the AVX-512 flags, called only after cpuHasAvx512() from the
// AVX-512 tiles). Arguments are already validated; job.layout is DWHC and !job.toDevice.
#pragma once

#include <cstdint>

#include "kernels/format/PlanarKernels.hpp"

namespace qaic::kernels::format {

// The whole 16 x 16 tiles of depth d and the chunk at c0: rows below H / 16 * 16 and columns below
// W / 16 * 16 (the caller's masked edge tiles do the rest).
void sweepWholeTiles(const PlanarJob& job, int64_t d, int64_t c0);

// Whether rowPairLines applies to the job's chunks of 8 and of 4 channels: W = 16n + 8 (n >= 1),
// H even, and the user buffer on a cache line.
bool rowPairLinesApply(const PlanarJob& job);

// The whole chunk of depth d at c0 (8 or 4 channels), every user line written with one aligned
// 64-byte store.
void rowPairLines(const PlanarJob& job, int64_t d, int64_t c0);

}  // namespace qaic::kernels::format
