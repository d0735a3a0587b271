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
  std::string programDir;                 // -t
  uint32_t device = 0;                    // -d
  std::vector<std::string> inputFiles;    // -i, repeatable, in input-buffer order
  std::string batchJson;                  // --aic-batch-json-input
  uint64_t numIterations = 40;            // -n / --num-iter
  std::optional<double> timeSeconds;      // --time
  uint32_t numActivations = 1;            // -a / --aic-num-of-activations
  uint32_t setSize = 10;                  // -S / --set-size
  uint32_t threadsPerQueue = 4;           // -T / --aic-threads-per-queue
  std::string writeOutputDir;             // --write-output-dir
  uint64_t writeOutputStartIter = 0;      // --write-output-start-iter
  uint64_t writeOutputNumSamples = 1;     // --write-output-num-samples
  bool checkOutput = false;               // -c / --check-output
  uint32_t submitTimeoutMs = 0;           // --submit-timeout (0 = 5000 ms)
  uint32_t submitRetryCount = 5;          // --submit-retry-count
  bool latencyProfiling = false;          // --aic-profiling-type latency
  uint64_t profilingNumSamples = 0;       // --aic-profiling-num-samples (0 = every inference)
  bool verbose = false;                   // -v
  bool help = false;                      // -h / --help
};

// Bad command line: the message names the option; exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

RunnerOptions parseRunnerOptions(int argc, const char* const* argv);
const char* runnerHelpText();

}  // namespace qaic::runner
