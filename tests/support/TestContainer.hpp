// Test helper: a real programqpc.bin (written by the shared QpcWriter) holding one program that
// computes y = relu(x) for x, y of dims [1, 8, 2, 2]: x arrives as DWHC float16, y leaves flat
// float. Its IO region layout follows docs/device-protocol.md section 4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::emu::test {

struct ReluContainer {
  std::vector<std::byte> bytes;
  ir::Dims dims{1, 8, 2, 2};
  ir::DeviceFormat inFormat{ir::DeviceLayout::DWHC, ir::DType::Float16};
  ir::DeviceFormat outFormat{ir::DeviceLayout::Flat, ir::DType::Float};
  uint64_t inOffset = 8192, inSize = 4096;
  uint64_t outOffset = 12288, outSize = 4096;
  uint64_t doorbell = 16384;
  uint64_t ioRegionSize = 20480;
  uint32_t doneSemaphore = 0;
  uint32_t numCores = 4;
};

// numCores: NSPs the program claims.
ReluContainer makeReluContainer(uint32_t numCores = 4);

}  // namespace qaic::emu::test
