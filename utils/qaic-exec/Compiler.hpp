// SPDX-License-Identifier: Apache-2.0
// qaic-exec's compiler: the ordered passes of Compiler.cpp (one file each in passes/) load,
// check and shape each specialization's network, lay out the IO region, pack the constants and
// write programqpc.bin atomically.
#pragma once

#include <cstdint>
#include <string>

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
  std::size_t partitionDevices = 0;  // devices of the partition config (the program runs on one)
};

// Throws CompileError, ir::IrError, onnx::ImportError or container::QpcFormatError; on any
// error no output file is left behind.
CompileSummary compile(const ExecOptions& options);

}  // namespace qaic::compiler
