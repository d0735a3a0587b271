#include "RunnerOptions.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

namespace qaic::runner {
namespace {

template <typename T>
T parseUnsigned(std::string_view option, std::string_view text, T minimum) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < minimum ||
      value > std::numeric_limits<T>::max())
    throw UsageError("option " + std::string(option) + ": '" + std::string(text) +
                     "' is not a whole number >= " + std::to_string(minimum));
  return static_cast<T>(value);
}

double parseSeconds(std::string_view option, std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
    throw UsageError("option " + std::string(option) + ": '" + copy + "' is not a positive number of seconds");
  return value;
}

}  // namespace

RunnerOptions parseRunnerOptions(int argc, const char* const* argv) {
  RunnerOptions options;
  bool numIterGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view name = arg;
    std::optional<std::string_view> inlineValue;
    if (arg.starts_with("--")) {
      if (auto eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        inlineValue = arg.substr(eq + 1);
      }
    }
    auto value = [&]() -> std::string_view {
      if (inlineValue) return *inlineValue;
      if (i + 1 >= argc) throw UsageError("option " + std::string(name) + " needs a value");
      return argv[++i];
    };
    auto noValue = [&] {
      if (inlineValue) throw UsageError("option " + std::string(name) + " takes no value");
    };

    if (name == "-h" || name == "--help") { noValue(); options.help = true; }
    else if (name == "-t") options.programDir = value();
    else if (name == "-d") options.device = parseUnsigned<uint32_t>(name, value(), 0);
    else if (name == "-i") options.inputFiles.emplace_back(value());
    else if (name == "--aic-batch-json-input") options.batchJson = value();
    else if (name == "-n" || name == "--num-iter") {
      options.numIterations = parseUnsigned<uint64_t>(name, value(), 1);
      numIterGiven = true;
    }
    else if (name == "--time") options.timeSeconds = parseSeconds(name, value());
    else if (name == "-a" || name == "--aic-num-of-activations") options.numActivations = parseUnsigned<uint32_t>(name, value(), 1);
    else if (name == "-S" || name == "--set-size") options.setSize = parseUnsigned<uint32_t>(name, value(), 1);
    else if (name == "-T" || name == "--aic-threads-per-queue" || name == "--threads-per-queue")
      options.threadsPerQueue = parseUnsigned<uint32_t>(name, value(), 1);
    else if (name == "--write-output-dir") options.writeOutputDir = value();
    else if (name == "--write-output-start-iter") options.writeOutputStartIter = parseUnsigned<uint64_t>(name, value(), 0);
    else if (name == "--write-output-num-samples") options.writeOutputNumSamples = parseUnsigned<uint64_t>(name, value(), 1);
    else if (name == "-c" || name == "--check-output") { noValue(); options.checkOutput = true; }
    else if (name == "--submit-timeout") options.submitTimeoutMs = parseUnsigned<uint32_t>(name, value(), 0);
    else if (name == "--submit-retry-count") options.submitRetryCount = parseUnsigned<uint32_t>(name, value(), 0);
    else if (name == "--aic-profiling-type") {
      std::string_view type = value();
      if (type == "latency") options.latencyProfiling = true;
      else if (type == "stats" || type == "trace")
        throw UsageError("option --aic-profiling-type: '" + std::string(type) +
                         "' profiling is not supported by the emulated device; use latency");
      else throw UsageError("option --aic-profiling-type: '" + std::string(type) + "' is not one of stats, trace, latency");
    }
    else if (name == "--aic-profiling-num-samples") options.profilingNumSamples = parseUnsigned<uint64_t>(name, value(), 1);
    else if (name == "-v" || name == "--verbose") { noValue(); options.verbose = true; }
    else throw UsageError("unknown option '" + std::string(arg) + "' (see --help)");
  }
  if (options.help) return options;
  if (options.programDir.empty()) throw UsageError("option -t <dir> is required (the directory holding programqpc.bin)");
  if (!options.inputFiles.empty() && !options.batchJson.empty())
    throw UsageError("options -i and --aic-batch-json-input cannot be combined");
  if (options.timeSeconds && numIterGiven)
    throw UsageError("options --time and -n/--num-iter cannot be combined");
  if (options.checkOutput && options.batchJson.empty())
    throw UsageError("option -c/--check-output compares with the output files of --aic-batch-json-input");
  return options;
}

const char* runnerHelpText() {
  return R"(Usage: qaic-runner -t <dir> [options]

Runs a compiled program (programqpc.bin in <dir>) on a device and prints throughput.

Program and device:
  -t <dir>                          directory holding programqpc.bin (required)
  -d <id>                           device id: $QAIC_ROOT/dev/accel/accel<id> (default 0)

Inputs (random data when neither is given):
  -i <file>                         raw input file; repeat once per input buffer, in buffer order
  --aic-batch-json-input <file>     IO sets from a JSON file (IO-files); paths relative to the file

Run length:
  -n, --num-iter <i>                inferences to submit (default 40); IO sets go round robin
  --time <seconds>                  submit for this long instead of -n

Parallelism:
  -a, --aic-num-of-activations <i>  activations of the program on the device (default 1)
  -S, --set-size <i>                inference handles per activation (default 10); -S 1 keeps the
                                    JSON's order
  -T, --aic-threads-per-queue <i>   pipeline threads per activation (default 4); -T 1 keeps order

Outputs:
  --write-output-dir <dir>          write outputs (not dropped ones) as <buffer>-inf-<iter>.bin
  --write-output-start-iter <i>     first inference to write (default 0)
  --write-output-num-samples <i>    inferences to write (default 1)
  -c, --check-output                compare outputs with the JSON's output files: integers exactly,
                                    float and float16 within |got - want| <= 1e-5 + 1e-3 * |want|

Data path:
  --submit-timeout <ms>             data-path timeout per inference (default 0 = 5000 ms)
  --submit-retry-count <n>          resubmissions after a timeout (default 5)

Profiling:
  --aic-profiling-type latency      print the mean time of every pipeline stage
  --aic-profiling-num-samples <i>   inferences to sample (default all)

Other:
  -v, --verbose                     log runtime messages at info level
  -h, --help                        this text

Exit status: 0 success; 1 an inference failed; 2 bad command line, batch JSON, input file or
program container; 3 -c found a mismatch; 4 the device is missing, removed, reset or stopped.
)";
}

}  // namespace qaic::runner
