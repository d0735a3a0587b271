// SPDX-License-Identifier: Apache-2.0
// qaic-exec's compiler: the ordered passes of Compiler.cpp (one file each in passes/) load,
// check and shape each specialization's network, lay out the IO region, pack the constants and
// write programqpc.bin atomically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ExecOptions.hpp"

namespace qaic::compiler {

struct CompileSummary {
  std::string outputPath;
  std::size_t inputs = 0;
  std::size_t outputs = 0;
  std::size_t retained = 0;         // retained-state pairs
  std::size_t specializations = 0;  // entries of -network-specialization-config
  std::size_t constants = 0;
  uint64_t constantBytes = 0;
  uint64_t ioRegionSize = 0;
  uint64_t fileBytes = 0;
  std::size_t partitionDevices = 0;  // devices of the partition config
  // A multi-device program (partitionDevices >= 2): each device's part, and the tensor slicing
  // report (what was split, what stayed whole and why, the collectives).
  struct DevicePart {
    uint32_t deviceId = 0;
    uint32_t numCores = 0;
    uint64_t weightBytes = 0;
    uint64_t retainedBytes = 0;
    uint64_t sentBytes = 0;
    uint64_t receivedBytes = 0;
  };
  std::vector<DevicePart> deviceParts;
  std::string sliceReport;
  std::size_t splitWeights = 0;  // weights divided among the devices
  // A pipeline (several partitions): its stage count, and each transfer between stages.
  std::size_t pipelineStages = 0;
  std::string pipelineReport;
};

// Throws CompileError, ir::IrError, onnx::ImportError or container::QpcFormatError; on any
// error no output file is left behind.
CompileSummary compile(const ExecOptions& options);

}  // namespace qaic::compiler
