// SPDX-License-Identifier: Apache-2.0
// qaic-runner: runs a compiled program on a device and prints the vendor tool's stats lines.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include <qaic/Context.hpp>
#include <qaic/InferenceSet.hpp>
#include <qaic/IoValidation.hpp>
#include <qaic/Qpc.hpp>

#include "BatchJson.hpp"
#include "FileCache.hpp"
#include "InputSource.hpp"
#include "LatencyFile.hpp"
#include "OutputWriter.hpp"
#include "Progress.hpp"
#include "QaicVersion.hpp"
#include "RunLoop.hpp"
#include "RunnerOptions.hpp"

namespace {

using namespace qaic::rt;
using namespace qaic::runner;

enum ExitCode : int { kOk = 0, kInferenceFailed = 1, kBadInput = 2, kMismatch = 3, kDeviceGone = 4 };

constexpr std::size_t kFileCacheBytes = 256u << 20;

bool isDeviceStatus(QStatus status) { return status == QS_NODEV || status == QS_DEV_REMOVED || status == QS_DEV_RESET; }

int fail(int code, const std::string& message) {
  std::cerr << "qaic-runner: error: " << message << "\n";
  return code;
}

int exitCodeFor(const Error& e) {
  if (isDeviceStatus(e.status())) return kDeviceGone;
  if (e.status() == QS_INVAL || e.status() == QS_INCOMPATIBLE || e.status() == QS_BUFFER_SIZE ||
      e.status() == QS_BUFFER_DIMS)
    return kBadInput;
  return kInferenceFailed;
}

void printStats(const RunResult& result, uint32_t batchSize) {
  const double rate = result.durationUs ? double(result.completed) * 1e6 / double(result.durationUs) * batchSize : 0.0;
  std::printf(" ---- Stats ----\n");
  std::printf("InferenceCnt %llu TotalDuration %lluus BatchSize %u Inf/Sec %.3f\n",
              static_cast<unsigned long long>(result.completed), static_cast<unsigned long long>(result.durationUs),
              batchSize, rate);
}

// The vendor's names for the pipeline stages, in pipeline order.
void printLatency(const RunResult& result) {
  static const std::pair<const char*, const char*> names[] = {
      {"0. queue wait", "enqTime"},
      {"1. input preprocessing", "preProcTime"},
      {"2. input transfer to a device", "submitTime"},
      {"3. execution time", "execToComplete"},
      {"4. output transfer from a device", "exectoVc"},
      {"5. output postprocessing", "postProc"},
  };
  std::printf(" ---- Latency (mean per inference) ----\n");
  for (const auto& [stage, vendorName] : names) {
    auto it = result.stages.find(stage);
    if (it == result.stages.end() || it->second.samples == 0) continue;
    std::printf("%-16s %10.1fus  (%s, %llu samples)\n", vendorName, it->second.totalUs / double(it->second.samples),
                stage, static_cast<unsigned long long>(it->second.samples));
  }
}

int run(const RunnerOptions& options) {
  std::shared_ptr<Qpc> qpc;
  try {
    qpc = Qpc::Factory(options.programDir);
  } catch (const QpcError& e) {
    return fail(kBadInput, e.what());
  }
  const auto& mappings = qpc->getBufferMappingsV2();
  const auto& program = qpc->getInfo().program.at(0);

  FileCache cache(kFileCacheBytes);
  std::unique_ptr<InputSource> source;
  try {
    if (!options.batchJson.empty())
      source = InputSource::batch(loadBatchJson(options.batchJson, shapeRules(mappings), {options.checkOutput}),
                                  mappings.size(), options.checkOutput, cache);
    else if (!options.inputFiles.empty())
      source = InputSource::files(mappings, options.inputFiles, cache);
    else
      source = InputSource::random(mappings, options.unboundRandom);
  } catch (const std::exception& e) {
    return fail(kBadInput, e.what());
  }

  std::unique_ptr<OutputWriter> writer;
  if (!options.writeOutputDir.empty()) {
    for (const auto& m : mappings)
      if ((m.ioType == BUFFER_IO_TYPE_OUTPUT || options.dumpInputBuffers) && !OutputWriter::isSafeName(m.bufferName))
        return fail(kBadInput, std::string(m.ioType == BUFFER_IO_TYPE_OUTPUT ? "output" : "input") + " buffer name '" +
                                   m.bufferName + "' in the container cannot be a file name");
    try {
      writer = std::make_unique<OutputWriter>(options.writeOutputDir);
    } catch (const OutputWriteError& e) {
      return fail(kBadInput, e.what());
    }
  }

  auto logger = [](QLogLevel level, const char* message, void*) { defaultLogger(level, message, nullptr); };
  // Failures reach the loop through each handle's status; the handler only keeps stderr quiet
  // unless -v asked for detail.
  auto errorHandler = [](QCtxId, QStatus, const char* message, void* verbose) {
    if (verbose) std::cerr << "qaic-runner: runtime: " << message << "\n";
  };
  try {
    QAicContextProperties contextProperties;
    contextProperties.initialLogLevel = options.verbose ? QL_INFO : QL_WARN;
    InferenceSetProperties properties;
    properties.name = "qaic-runner";
    properties.programProperties.dataPathTimeoutMs = options.submitTimeoutMs ? options.submitTimeoutMs : 5000;
    properties.programProperties.submitNumRetries = options.submitRetryCount;
    properties.queueProperties.numThreadsPerQueue = options.threadsPerQueue;
    void* verbose = options.verbose ? reinterpret_cast<void*>(1) : nullptr;
    std::vector<QID> named = options.deviceList;
    if (options.device) named = {*options.device};
    auto context = Context::Factory(&contextProperties, named, logger, nullptr, errorHandler, verbose);

    // -D: the activations spread round robin over the listed devices, one set per device.
    // Neither -d nor -D: the first device that accepts the activations; the device itself
    // refuses one it has no room for, so nothing is guessed from free counts that may change.
    std::vector<std::shared_ptr<InferenceSet>> sets;
    std::string usedDevices;
    if (const uint32_t parts = qpc->getInfo().numDevices; parts > 1) {
      // A multi-device program: one set whose parts go on the devices named (-d several times,
      // -d or -D with a list), or on the next free devices of one P2P group (the runtime picks).
      properties.programProperties.devMapping = named;
      auto set = InferenceSet::Factory(context, qpc, named.empty() ? 0 : named.front(), options.setSize,
                                       options.activationsGiven ? options.numActivations : 1, &properties);
      usedDevices = named.empty() ? "auto" : "";
      for (std::size_t k = 0; k < named.size(); ++k) usedDevices += (k ? ":" : "") + std::to_string(named[k]);
      if (options.verbose) std::cerr << "qaic-runner: " << parts << " device parts on devices " << usedDevices << "\n";
      sets.push_back(std::move(set));
    } else if (!options.deviceList.empty()) {
      const auto n = static_cast<uint32_t>(options.deviceList.size());
      if (options.numActivations < n)
        return fail(kBadInput, "the devices named (" + std::to_string(n) + ") are more than the " +
                                   std::to_string(options.numActivations) +
                                   " activations of a single-device program; each needs at least one");
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t activations = options.numActivations / n + (k < options.numActivations % n ? 1 : 0);
        sets.push_back(
            InferenceSet::Factory(context, qpc, options.deviceList[k], options.setSize, activations, &properties));
        usedDevices += (k ? ":" : "") + std::to_string(options.deviceList[k]);
      }
    } else if (options.device) {
      sets.push_back(
          InferenceSet::Factory(context, qpc, *options.device, options.setSize, options.numActivations, &properties));
      usedDevices = std::to_string(*options.device);
    } else {
      std::string refusals;
      for (QID device : context->getDevices()) {
        try {
          sets.push_back(
              InferenceSet::Factory(context, qpc, device, options.setSize, options.numActivations, &properties));
          usedDevices = std::to_string(device);
          break;
        } catch (const Error& e) {
          if (e.status() != QS_NO_RESOURCES && e.status() != QS_DEV_RESET && e.status() != QS_DEV_REMOVED &&
              e.status() != QS_DEVICE_ERROR)
            throw;
          refusals += "; device " + std::to_string(device) + ": " + e.what();
        }
      }
      if (sets.empty())
        return fail(kDeviceGone, "no device has room for " + std::to_string(options.numActivations) +
                                     " activation(s) of the program" + refusals);
      if (options.verbose) std::cerr << "qaic-runner: picked device " << usedDevices << "\n";
    }
    std::vector<InferenceSet*> setPointers;
    for (const auto& set : sets) setPointers.push_back(set.get());

    std::atomic<uint64_t> completed{0};
    RunResult result;
    {
      Progress progress(options.timeSeconds ? std::nullopt : std::optional<uint64_t>(options.numIterations),
                        options.timeSeconds, completed);
      result = runInferences(setPointers, mappings, *source, options, cache, writer.get(), completed);
    }
    printStats(result, program.batchSize ? program.batchSize : 1);
    if (options.latencyProfiling) printLatency(result);
    if (!options.profilingOutDir.empty()) {
      LatencyFileHeader header;
      header.program = (std::filesystem::path(options.programDir) / "programqpc.bin").string();
      header.programName = program.name;
      header.devices = usedDevices;
      header.numActivations = options.numActivations;
      header.setSize = options.setSize;
      header.threadsPerQueue = options.threadsPerQueue;
      header.batchSize = program.batchSize ? program.batchSize : 1;
      header.inferences = result.completed;
      header.startIter = options.profilingStartIter;
      try {
        std::printf("Latency samples: %s\n", writeLatencyFile(options.profilingOutDir, header, result.samples).c_str());
      } catch (const OutputWriteError& e) {
        return fail(kInferenceFailed, e.what());
      }
    }

    if (result.writeError) return fail(kInferenceFailed, *result.writeError);
    if (result.failure != QS_SUCCESS)
      return fail(isDeviceStatus(result.failure) ? kDeviceGone : kInferenceFailed,
                  std::string("inference failed (") + statusName(result.failure) + "): " + result.failureMessage);
    if (result.mismatch)
      return fail(kMismatch, "output check failed in " + std::to_string(result.mismatches) +
                                 " output(s); first: " + *result.mismatch);
    if (options.checkOutput)
      std::printf("Output check passed: %llu inferences\n", static_cast<unsigned long long>(result.completed));
    return kOk;
  } catch (const Error& e) {
    std::string message = std::string(statusName(e.status())) + ": " + e.what();
    if (e.status() == QS_NODEV) message += " (is qaic-emu running? QAIC_ROOT selects the device root)";
    return fail(exitCodeFor(e), message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  RunnerOptions options;
  try {
    options = parseRunnerOptions(argc, argv);
  } catch (const UsageError& e) {
    return fail(kBadInput, e.what());
  }
  if (options.help) {
    std::fputs(runnerHelpText(), stdout);
    return kOk;
  }
  if (options.version) {
    qaic::printVersion("qaic-runner");
    return kOk;
  }
  return run(options);
}
