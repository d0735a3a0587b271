// SPDX-License-Identifier: Apache-2.0
// qaic-runner's command line: the vendor tool's option names and defaults
// (../shared/reference/qaic-tools.md), so existing scripts keep working.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace qaic::runner {

struct RunnerOptions {
  std::string programDir;               // -t / --test-data
  std::optional<uint32_t> device;       // -d / --device-id; absent: the first device with room
  std::vector<uint32_t> deviceList;     // -D / --dev-list 0:1:2 (or 0,1,2): activations spread
                                        // (also -d given several times or with a list); a
                                        // multi-device program's parts go on these devices
  std::vector<std::string> inputFiles;  // -i / --input-file, repeatable, in input-buffer order
  bool unboundRandom = false;           // --unbound-random: random inputs over the type's range
  std::string batchJson;                // --aic-batch-json-input
  uint64_t numIterations = 40;          // -n / --num-iter
  bool activationsGiven = false;        // -a was given (else a multi-device program activates once)
  std::optional<double> timeSeconds;    // --time
  uint32_t numActivations = 1;          // -a / --aic-num-of-activations
  uint32_t setSize = 10;                // -S / --set-size
  uint32_t threadsPerQueue = 4;         // -T / --aic-threads-per-queue
  std::string writeOutputDir;           // --write-output-dir
  uint64_t writeOutputStartIter = 0;    // --write-output-start-iter
  uint64_t writeOutputNumSamples = 1;   // --write-output-num-samples
  bool checkOutput = false;             // -c / --check-output
  uint32_t submitTimeoutMs = 0;         // --submit-timeout (0 = 5000 ms)
  uint32_t submitRetryCount = 5;        // --submit-retry-count
  bool dumpInputBuffers = false;        // --dump-input-buffers (into --write-output-dir)
  bool latencyProfiling = false;        // --aic-profiling-type latency
  uint64_t profilingStartIter = 0;      // --aic-profiling-start-iter
  uint64_t profilingNumSamples = 0;     // --aic-profiling-num-samples (0 = every inference)
  std::string profilingOutDir;          // --aic-profiling-out-dir: per-sample latency file
  std::vector<std::string> ignored;     // accepted options without meaning on the emulator
  bool verbose = false;                 // -v
  bool help = false;                    // -h / --help
  bool version = false;                 // --version
};

// Bad command line: the message names the option; exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

RunnerOptions parseRunnerOptions(int argc, const char* const* argv);
const char* runnerHelpText();

// Whether inference `iteration` is among the profiled samples
// (--aic-profiling-start-iter, --aic-profiling-num-samples).
bool isProfiledIteration(const RunnerOptions& options, uint64_t iteration);

}  // namespace qaic::runner
