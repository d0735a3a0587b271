// SPDX-License-Identifier: Apache-2.0
// The F16C/AVX2 kernels between a float NCHW user buffer and a chunked (DWHC / DHWC) device
// buffer, one file each: PlanarRegion.cpp (any region, the general tile), DwhcTiles.cpp and
// DhwcRows.cpp (the fast paths). All are compiled with -mf16c -mavx2 and run only after
// cpuHasF16cAvx2(); arguments are already validated.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/format/DeviceFormat.hpp"

namespace qaic::kernels::format {

struct PlanarJob {
  DeviceGeometry geometry;
  ir::DeviceLayout layout;  // DWHC or DHWC
  float* user;              // NCHW floats (only read when toDevice)
  std::byte* device;        // float16 or float elements (only read when !toDevice)
  bool half;                // device elements are float16, else float
  bool toDevice;            // user -> device, else device -> user
};

// Control flow the kernel files share; in an unnamed namespace like the vector helpers of
// Avx2Common.hpp, so that each file keeps the copy compiled with its own flags.
namespace {

// Calls body(half, toDevice), each a std::bool_constant, for the job's device element type and
// direction: a kernel template is instantiated for all four and chosen once per call.
template <typename Body>
void withJobKind(const PlanarJob& job, Body&& body) {
  if (job.half) {
    job.toDevice ? body(std::true_type{}, std::true_type{}) : body(std::true_type{}, std::false_type{});
  } else {
    job.toDevice ? body(std::false_type{}, std::true_type{}) : body(std::false_type{}, std::false_type{});
  }
}

// Calls body(d, c0, chunk) for every depth slice d and channel chunk starting at c0: chunks of 8
// channels, the last one C % 8 wide when C is not a multiple of 8.
template <typename Body>
void forEachChunk(const DeviceGeometry& g, Body&& body) {
  for (int64_t d = 0; d < g.depth; ++d)
    for (int64_t c0 = 0; c0 < g.channels; c0 += 8) body(d, c0, std::min<int64_t>(8, g.channels - c0));
}

}  // namespace

// Whether the tensor counts as coming from DRAM for the tile orders: over 8 MB of user floats
// (single images and small batches stay in the caches between conversions).
inline bool tensorFromDram(const DeviceGeometry& g) {
  return g.depth * g.channels * g.height * g.width * static_cast<int64_t>(sizeof(float)) > (int64_t{8} << 20);
}

// Pixels h in [hBegin, hEnd), w in [wBegin, wEnd) of depth d and the chunk starting at channel c0.
// Eight W positions of the chunk's channels per step; a pixel's vector store may write up to
// seven elements past the pixel, inside its own column (DWHC) or row (DHWC), which this function
// rewrites later as long as the region reaches the end of that column or row.
void planarRegion(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin,
                  int64_t wEnd);

// Whole tensors. DWHC: 8 x 8 pixel tiles transposed per chunk; rows and columns outside whole
// tiles (all of them when H < 8) via planarRegion.
void dwhcTiles(const PlanarJob& job);
// DWHC: the whole 8 x 8 tiles of depth d and the chunk at c0 in rows [hBegin, hEnd) and columns
// [wBegin, wEnd), all four multiples of 8 (the AVX-512 kernel's bands of eight rows / columns).
void dwhcTileRegion(const PlanarJob& job, int64_t d, int64_t c0, int64_t hBegin, int64_t hEnd, int64_t wBegin,
                    int64_t wEnd);
// DHWC (and DWHC with H == 1, the same order): per row, channels interleaved with byte shuffles.
void dhwcRows(const PlanarJob& job);

}  // namespace qaic::kernels::format
