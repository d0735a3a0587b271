// SPDX-License-Identifier: Apache-2.0
// The submission loop: keeps every inference handle busy with the next IO set (round robin),
// and on each completion (a runtime pipeline thread) checks and writes outputs, collects stage
// latencies and gives the handle back.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <qaic/InferenceSet.hpp>
#include <qaic/Qpc.hpp>

#include "FileCache.hpp"
#include "InputSource.hpp"
#include "OutputWriter.hpp"
#include "RunnerOptions.hpp"

namespace qaic::runner {

struct StageMean {
  double totalUs = 0;
  uint64_t samples = 0;
};

// One profiled inference, in the columns of the vendor's per-sample latency file (microseconds).
struct LatencySample {
  uint64_t sample = 0;         // the inference's iteration
  uint64_t hostRoundTrip = 0;  // submit() to the completion callback
  uint64_t enqTime = 0, preProcTime = 0, submitTime = 0, exectoVc = 0, execToComplete = 0, postProc = 0;
  uint64_t execTotal = 0;           // execToComplete + exectoVc
  uint64_t totalRoundtripTime = 0;  // input preparation to the end of checks and writes
};

struct RunResult {
  uint64_t submitted = 0;
  uint64_t completed = 0;                            // completed successfully
  uint64_t durationUs = 0;                           // first submit to last completion
  qaic::rt::QStatus failure = qaic::rt::QS_SUCCESS;  // first failed inference's status
  std::string failureMessage;
  std::optional<std::string> mismatch;  // first -c difference
  uint64_t mismatches = 0;
  std::optional<std::string> writeError;
  std::map<std::string, StageMean> stages;  // --aic-profiling-type latency
  std::vector<LatencySample> samples;       // the same inferences, one by one
};

// Inference i goes to sets[i % sets.size()] (-D: one set per device).
RunResult runInferences(const std::vector<qaic::rt::InferenceSet*>& sets, const qaic::rt::v2::BufferMappings& mappings,
                        InputSource& source, const RunnerOptions& options, FileCache& cache, const OutputWriter* writer,
                        std::atomic<uint64_t>& completedCounter);

}  // namespace qaic::runner
