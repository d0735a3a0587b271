// SPDX-License-Identifier: Apache-2.0
#include "RunnerOptions.hpp"

#include <algorithm>
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
  if (ec != std::errc() || end != text.data() + text.size() || value < minimum || value > std::numeric_limits<T>::max())
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

// -D 3:1:2 (the vendor's device map) or 3,1,2: distinct device ids.
std::vector<uint32_t> parseDeviceList(std::string_view option, std::string_view text) {
  std::vector<uint32_t> ids;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find_first_of(":,", begin);
    if (end == std::string_view::npos) end = text.size();
    const uint32_t id = parseUnsigned<uint32_t>(option, text.substr(begin, end - begin), 0);
    for (uint32_t seen : ids)
      if (seen == id)
        throw UsageError("option " + std::string(option) + ": device " + std::to_string(id) + " is listed twice");
    ids.push_back(id);
    begin = end + 1;
  }
  return ids;
}

}  // namespace

bool isProfiledIteration(const RunnerOptions& options, uint64_t iteration) {
  if (iteration < options.profilingStartIter) return false;
  return options.profilingNumSamples == 0 || iteration - options.profilingStartIter < options.profilingNumSamples;
}

RunnerOptions parseRunnerOptions(int argc, const char* const* argv) {
  RunnerOptions options;
  bool numIterGiven = false, activationsGiven = false;
  std::vector<uint32_t> dashD;  // every -d
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

    if (name == "-h" || name == "--help") {
      noValue();
      options.help = true;
    } else if (name == "--version") {
      noValue();
      options.version = true;
    } else if (name == "-t" || name == "--test-data")
      options.programDir = value();
    else if (name == "-d" || name == "--device-id" || name == "--aic-device-id" || name == "--dev") {
      // Repeated or a list (-d 0 -d 1, -d 0:1): the devices of a multi-device program.
      for (uint32_t id : parseDeviceList(name, value())) {
        if (std::find(dashD.begin(), dashD.end(), id) != dashD.end())
          throw UsageError("option " + std::string(name) + ": device " + std::to_string(id) + " is listed twice");
        dashD.push_back(id);
      }
    } else if (name == "-D" || name == "--dev-list")
      options.deviceList = parseDeviceList(name, value());
    else if (name == "-i" || name == "--input-file")
      options.inputFiles.emplace_back(value());
    else if (name == "--unbound-random") {
      noValue();
      options.unboundRandom = true;
    } else if (name == "--dump-input-buffers") {
      noValue();
      options.dumpInputBuffers = true;
    } else if (name == "--aic-batch-json-input")
      options.batchJson = value();
    else if (name == "-n" || name == "--num-iter") {
      options.numIterations = parseUnsigned<uint64_t>(name, value(), 1);
      numIterGiven = true;
    } else if (name == "--time")
      options.timeSeconds = parseSeconds(name, value());
    else if (name == "-a" || name == "--aic-num-of-activations") {
      options.numActivations = parseUnsigned<uint32_t>(name, value(), 1);
      activationsGiven = true;
    } else if (name == "-S" || name == "--set-size")
      options.setSize = parseUnsigned<uint32_t>(name, value(), 1);
    else if (name == "-T" || name == "--aic-threads-per-queue" || name == "--threads-per-queue")
      options.threadsPerQueue = parseUnsigned<uint32_t>(name, value(), 1);
    else if (name == "--write-output-dir")
      options.writeOutputDir = value();
    else if (name == "--write-output-start-iter")
      options.writeOutputStartIter = parseUnsigned<uint64_t>(name, value(), 0);
    else if (name == "--write-output-num-samples")
      options.writeOutputNumSamples = parseUnsigned<uint64_t>(name, value(), 1);
    else if (name == "-c" || name == "--check-output") {
      noValue();
      options.checkOutput = true;
    } else if (name == "--submit-timeout")
      options.submitTimeoutMs = parseUnsigned<uint32_t>(name, value(), 0);
    else if (name == "--submit-retry-count")
      options.submitRetryCount = parseUnsigned<uint32_t>(name, value(), 0);
    else if (name == "--aic-profiling-type") {
      std::string_view type = value();
      if (type == "latency")
        options.latencyProfiling = true;
      else if (type == "stats" || type == "trace")
        throw UsageError("option --aic-profiling-type: '" + std::string(type) +
                         "' profiling is not supported by the emulated device; use latency");
      else
        throw UsageError("option --aic-profiling-type: '" + std::string(type) +
                         "' is not one of stats, trace, latency");
    } else if (name == "--aic-profiling-num-samples")
      options.profilingNumSamples = parseUnsigned<uint64_t>(name, value(), 1);
    else if (name == "--aic-profiling-start-iter")
      options.profilingStartIter = parseUnsigned<uint64_t>(name, value(), 0);
    else if (name == "--aic-profiling-out-dir")
      options.profilingOutDir = value();
    else if (name == "--aic-profiling-format") {  // deprecated by the vendor; the type decides the layout
      (void)value();
      options.ignored.emplace_back(name);
    } else if (name == "-v" || name == "--verbose") {
      noValue();
      options.verbose = true;
    } else
      throw UsageError("unknown option '" + std::string(arg) + "' (see --help)");
  }
  if (options.help || options.version) return options;
  if (options.programDir.empty())
    throw UsageError("option -t <dir> is required (the directory holding programqpc.bin)");
  if (!options.inputFiles.empty() && !options.batchJson.empty())
    throw UsageError("options -i and --aic-batch-json-input cannot be combined");
  if (options.timeSeconds && numIterGiven) throw UsageError("options --time and -n/--num-iter cannot be combined");
  if (options.checkOutput && options.batchJson.empty())
    throw UsageError("option -c/--check-output compares with the output files of --aic-batch-json-input");
  if (!dashD.empty() && !options.deviceList.empty())
    throw UsageError("options -d and -D/--dev-list cannot be combined");
  if (dashD.size() == 1) options.device = dashD.front();
  if (dashD.size() > 1) options.deviceList = dashD;
  options.activationsGiven = activationsGiven;
  // -D without -a: one activation on each listed device.
  if (!options.deviceList.empty() && !activationsGiven)
    options.numActivations = static_cast<uint32_t>(options.deviceList.size());
  // -d given several times names a multi-device program's cards, whose activations are each
  // on all of them: checked against the program once it is read (main.cpp).
  if (dashD.size() < 2 && options.numActivations < options.deviceList.size())
    throw UsageError("option -D/--dev-list names " + std::to_string(options.deviceList.size()) +
                     " devices but -a gives " + std::to_string(options.numActivations) +
                     " activations; each listed device needs at least one");
  if (options.unboundRandom && (!options.inputFiles.empty() || !options.batchJson.empty()))
    throw UsageError("option --unbound-random shapes random inputs; it cannot go with -i or --aic-batch-json-input");
  if (options.dumpInputBuffers && options.writeOutputDir.empty())
    throw UsageError("option --dump-input-buffers writes into --write-output-dir, which is missing");
  if (!options.profilingOutDir.empty() && !options.latencyProfiling)
    throw UsageError(
        "option --aic-profiling-out-dir holds the per-sample latency file of --aic-profiling-type latency");
  return options;
}

const char* runnerHelpText() {
  return R"(Usage: qaic-runner -t <dir> [options]

Runs a compiled program (programqpc.bin in <dir>) on a device and prints throughput.

Program and device:
  -t, --test-data <dir>             directory holding programqpc.bin (required)
  -d, --device-id <id>              device id: $QAIC_ROOT/dev/accel/accel<id>; also --aic-device-id
                                    and --dev. Default: the first device with room for the
                                    activations (the device refuses one without room). Given
                                    several times or as a list (-d 0 -d 1, -d 0:1): the devices
                                    of a multi-device program, part p on the p-th; without -d
                                    its parts go on the first free P2P-linked devices
  -D, --dev-list <id>[:<id>...]     spread the activations round robin over these devices (0:1:2
                                    or 0,1,2); without -a, one activation on each

Inputs (random data when neither is given):
  -i, --input-file <file>           raw input file; repeat once per input buffer, in buffer order
  --aic-batch-json-input <file>     IO sets from a JSON file (IO-files); paths relative to the file
  --unbound-random                  random inputs over the whole range of their type (finite floats
                                    of any magnitude, integers of any value) instead of floats in
                                    [0, 1) and integers in [0, 16)

Run length:
  -n, --num-iter <i>                inferences to submit (default 40); IO sets go round robin
  --time <seconds>                  submit for this long instead of -n

Parallelism:
  -a, --aic-num-of-activations <i>  activations of the program (default 1; with -D, one per device)
  -S, --set-size <i>                inference handles per activation (default 10); -S 1 keeps the
                                    JSON's order
  -T, --aic-threads-per-queue <i>   an activation's conversions at once on the pipeline threads
                                    (default 4); -T 1 keeps order

Outputs:
  --write-output-dir <dir>          write outputs (not dropped ones) as <buffer>-inf-<iter>.bin
  --write-output-start-iter <i>     first inference to write (default 0)
  --write-output-num-samples <i>    inferences to write (default 1)
  --dump-input-buffers              also write the inputs of those inferences, the same way
  -c, --check-output                compare outputs with the JSON's output files: integers exactly,
                                    float and float16 within |got - want| <= 1e-5 + 1e-3 * |want|

Data path:
  --submit-timeout <ms>             data-path timeout per inference (default 0 = 5000 ms)
  --submit-retry-count <n>          resubmissions after a timeout (default 5)

Profiling:
  --aic-profiling-type latency      print the mean time of every pipeline stage (stats and trace
                                    are not available on the emulated device and are refused)
  --aic-profiling-start-iter <i>    first inference profiled (default 0)
  --aic-profiling-num-samples <i>   inferences profiled (default all from the start iteration)
  --aic-profiling-out-dir <dir>     also write <dir>/aic-profiling-latency-<program>.txt: four
                                    header lines, then CSV with Sample, hostRoundTrip, enqTime,
                                    preProcTime, submitTime, execTotal, exectoVc, execToComplete,
                                    postProc, totalRoundtripTime, one row per profiled inference,
                                    times in microseconds

Accepted for compatibility, without effect on the emulated device:
  --aic-profiling-format <format>   deprecated by the vendor; the profiling type sets the layout

Other:
  -v, --verbose                     log runtime messages at info level
  -h, --help                        this text
  --version                         print the version and exit

Latency columns: hostRoundTrip is submit() to the completion callback; enqTime the wait for a
pipeline thread; preProcTime the conversion into the device's formats; submitTime the transfer
to the device and the doorbell; execToComplete the device's execution; exectoVc the transfer of
the outputs back; execTotal is execToComplete + exectoVc; postProc the conversion into the user's
formats; totalRoundtripTime runs from preparing the inputs to the end of output checks and writes.

Exit status: 0 success; 1 an inference failed; 2 bad command line, batch JSON, input file or
program container; 3 -c found a mismatch; 4 the device is missing, removed, reset or stopped, or
no device has room.

Environment:
  QAIC_ROOT                         where devices are found (unset: the real /dev and /sys)
)";
}

}  // namespace qaic::runner
