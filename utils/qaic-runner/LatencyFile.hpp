// SPDX-License-Identifier: Apache-2.0
// --aic-profiling-out-dir: the vendor's per-sample latency file, which the SDK's latency scripts
// read: four header lines, then CSV (a header row, one row per profiled inference, microseconds).
// Written to a temporary in the directory and renamed, so the file is complete or absent.
#pragma once

#include <string>
#include <vector>

#include "RunLoop.hpp"

namespace qaic::runner {

struct LatencyFileHeader {
  std::string program;      // <dir>/programqpc.bin
  std::string programName;  // the container's program name
  std::string devices;      // "0" or "0:1"
  uint32_t numActivations = 1, setSize = 1, threadsPerQueue = 1, batchSize = 1;
  uint64_t inferences = 0;  // completed in the run
  uint64_t startIter = 0;
};

// The column names, in file order.
extern const char* const kLatencyColumns;

// Returns the path written; throws OutputWriteError naming the file.
std::string writeLatencyFile(const std::string& directory, const LatencyFileHeader& header,
                             const std::vector<LatencySample>& samples);

}  // namespace qaic::runner
