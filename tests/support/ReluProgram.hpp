// SPDX-License-Identifier: Apache-2.0
// The suites' test program, written with the shared container writer so that the device tests
// need no compiler: y = relu(x), one program on `numCores` NSPs with done semaphore 0. By default
// x and y are [1,16] floats in flat float device formats (device bytes are the user's bytes);
// the data-path tests give x a native format. The full-network tests use examples/smallcnn
// compiled by qaic-exec instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::testing {

// The IO region (docs/device-protocol.md section 4): the request and response descriptors at 0
// and 4096, then the doorbell, the input and the output, a page each.
inline constexpr std::size_t kReluElements = 16;
inline constexpr uint64_t kReluDoorbell = 8192;
inline constexpr uint64_t kReluInputOffset = 12288;
inline constexpr uint64_t kReluOutputOffset = 16384;
inline constexpr uint64_t kReluBufferBytes = 4096;
inline constexpr uint64_t kReluIoRegion = 20480;

struct ReluProgram {
  std::vector<std::byte> bytes;  // programqpc.bin
  ir::Dims dims;
  ir::DeviceFormat inFormat;
  ir::DeviceFormat outFormat{ir::DeviceLayout::Flat, ir::DType::Float};
  uint32_t numCores = 1;
  uint64_t doorbell = kReluDoorbell;
  uint64_t inOffset = kReluInputOffset, inSize = kReluBufferBytes;
  uint64_t outOffset = kReluOutputOffset, outSize = kReluBufferBytes;
  uint64_t ioRegionSize = kReluIoRegion;
  uint32_t doneSemaphore = 0;
};

// `dims` must fit a page in `inFormat` and as floats.
ReluProgram makeReluProgram(uint32_t numCores = 1, ir::Dims dims = {1, kReluElements},
                            ir::DeviceFormat inFormat = {ir::DeviceLayout::Flat, ir::DType::Float});

// makeReluProgram(numCores).bytes
std::vector<std::byte> reluProgram(uint32_t numCores = 1);

}  // namespace qaic::testing
