// SPDX-License-Identifier: Apache-2.0
// Why the emulator manages its heap by hand. The emulated NSPs compute on worker threads, and
// glibc gives such threads their own malloc arenas. A network's tensors are freed when an
// inference or activation ends, but glibc raises its mmap threshold after each large free (up to
// 32 MiB), so later tensors of that size come from the arenas and their pages stay there: every
// client run left the daemon larger (about 400 MB per ResNet-50 run, 16 MB per ResNet-18 run,
// measured on AMD EPYC Zen 5). A fixed threshold keeps tensors of 4 MiB and more in their own
// mappings, returned on free (no measurable cost: ResNet-18/-50 inferences per second unchanged);
// a trim on control events (deactivate, a client's file released) returns the free pages of the
// arenas. Neither runs per inference.
#pragma once

#include <malloc.h>

namespace qaic::emu {

inline void keepLargeAllocationsReturnable() { mallopt(M_MMAP_THRESHOLD, 4 << 20); }

inline void returnFreedMemoryToSystem() { malloc_trim(0); }

}  // namespace qaic::emu
