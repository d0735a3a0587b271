// SPDX-License-Identifier: Apache-2.0
// Greedy text generation with a decoder exported by export_decoder.py (the KV-cache convention:
// input_ids, position_ids, past_key.<i>, past_value.<i> in; logits and <X>_RetainedState out),
// on libqaic's public API only. Prefill runs the prompt in one inference, then each decode step
// feeds back the argmax of the last logits as the next token.
//
// It runs any of the ways such a decoder is compiled:
//   one program with specializations (qaic-exec -network-specialization-config): the allowed
//     shape whose seq_len is the prompt's length prefills, the one with seq_len 1 decodes;
//   two programs compiled with static shapes (-onnx-define-symbol): the first prefills, the
//     second decodes;
//   a single static program of seq_len 1: the prompt goes in one token at a time.
// A program compiled with -retained-state keeps the KV cache on the device (its past_* buffers
// are not among the user's buffers); otherwise this program keeps the cache and feeds each
// inference's <X>_RetainedState outputs back as the next inference's <X> inputs.
//
// Builds as C++17 and C++20 against an installed qaic (CMakeLists.txt beside this file).
#include <qaic/qaic.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace qaic::rt;

constexpr const char* kUsage = R"(Usage: llm-generate [options] <program dir> [<decode program dir>]

Greedy generation with a decoder in the KV-cache convention of export_decoder.py: prefill of the
prompt, then one decode step per generated token, each feeding back the argmax of the logits.
With one program dir, the program serves prefill and decode (a specialized program, or a
static seq_len 1 program that takes the prompt one token at a time); with two, the first
prefills and the second decodes.

Options:
  --prompt <id,id,...>   the prompt's token ids (required)
  --tokens <n>           tokens to generate, the prefill's included (default 16)
  -d, --device <id>      device id: $QAIC_ROOT/dev/accel/accel<id> (default 0); given once
                         per device for a program compiled for several (-mdp-load-partition-
                         config), whose part p goes on the p-th device given
  --logits-dir <dir>     write each step's logits as <dir>/logits-<step>.bin (float32)
  --repeat <n>           run the whole generation n times (the cache is overwritten from
                         position 0 each time) and report the median times (default 1)
  -h, --help             this text

Prints the generated tokens, one line, then the prefill's time and the decode steps' tokens
per second, each with the bytes the runtime moved between the user's buffers and the device
per inference (the KV cache among them unless the program retains it on the device):
  prefill: 8 tokens in 0.602 ms, 1104 bytes moved
  decode: 7 tokens in 0.740 ms, 9462.9 tokens/s, 528 bytes moved per step
Exit status: 0 success; 1 an inference failed; 2 bad arguments or a program that
does not follow the convention.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::vector<std::string> programDirs;
  std::vector<int64_t> prompt;
  int tokens = 16;
  std::vector<QID> devices;  // empty: device 0
  std::string logitsDir;
  int repeat = 1;
};

long parseNumber(const std::string& option, const std::string& text, long low, long high) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < low || value > high)
    throw UsageError(option + ": expected a number in [" + std::to_string(low) + ", " + std::to_string(high) +
                     "], got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--prompt") {
      const std::string list = value();
      std::size_t start = 0;
      while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        options.prompt.push_back(parseNumber("--prompt", list.substr(start, comma - start), 0, INT32_MAX));
        start = comma + 1;
      }
    } else if (arg == "--tokens") {
      options.tokens = static_cast<int>(parseNumber(arg, value(), 1, 1 << 20));
    } else if (arg == "-d" || arg == "--device") {
      options.devices.push_back(static_cast<QID>(parseNumber(arg, value(), 0, INT32_MAX)));
    } else if (arg == "--repeat") {
      options.repeat = static_cast<int>(parseNumber(arg, value(), 1, 1 << 20));
    } else if (arg == "--logits-dir") {
      options.logitsDir = value();
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg + " (see --help)");
    } else {
      options.programDirs.push_back(arg);
    }
  }
  if (options.programDirs.empty() || options.programDirs.size() > 2)
    throw UsageError("expected one or two program dirs (see --help)");
  if (options.prompt.empty()) throw UsageError("--prompt is required (see --help)");
  if (options.devices.empty()) options.devices.push_back(0);
  return options;
}

// The KV cache while the host keeps it: the <X> inputs of the next inference by name, and the
// <X>_RetainedState outputs the current one writes; swapped after each inference.
struct HostCache {
  std::map<std::string, std::vector<uint8_t>> current;
  std::map<std::string, std::vector<uint8_t>> next;
};

constexpr const char* kRetainedSuffix = "_RetainedState";

// One compiled decoder, activated once on the device, with one inference handle.
class Decoder {
 public:
  Decoder(const std::shared_ptr<Context>& context, const std::string& dir, const std::vector<QID>& devices)
      : dir_(dir) {
    qpc_ = Qpc::Factory(dir);
    mappings_ = qpc_->getBufferMappingsV2();
    InferenceSetProperties properties;
    properties.queueProperties.numThreadsPerQueue = 1;
    properties.name = "llm-generate";
    // A program split over several devices puts part p on devMapping's p-th; one compiled for
    // one device runs on the first given.
    const uint32_t parts = qpc_->getInfo().numDevices;
    if (parts > 1) {
      if (devices.size() < parts)
        throw UsageError(dir + ": the program spans " + std::to_string(parts) + " devices; give -d once for each");
      properties.programProperties.devMapping = devices;
    }
    set_ = InferenceSet::Factory(context, qpc_, devices.front(), /*setSize=*/1, /*numActivations=*/1, &properties);
    inputIds_ = find("input_ids", BUFFER_IO_TYPE_INPUT, BUFFER_DATA_TYPE_INT64I);
    positionIds_ = find("position_ids", BUFFER_IO_TYPE_INPUT, BUFFER_DATA_TYPE_INT64I);
    logits_ = find("logits", BUFFER_IO_TYPE_OUTPUT, BUFFER_DATA_TYPE_FLOAT);
    const auto& logitsDims = mappings_[logits_].ioShapes.defaultDims;
    if (logitsDims.empty()) throw UsageError(dir + ": buffer 'logits' has no dims");
    vocab_ = static_cast<std::size_t>(logitsDims.back());
    storage_.resize(mappings_.size());
    for (std::size_t i = 0; i < mappings_.size(); ++i) {
      const std::string& name = mappings_[i].bufferName;
      if (mappings_[i].ioType == BUFFER_IO_TYPE_INPUT && name.compare(0, 5, "past_") == 0) cacheInputs_.push_back(i);
      if (mappings_[i].ioType == BUFFER_IO_TYPE_OUTPUT && endsWithRetained(name)) cacheOutputs_.push_back(i);
    }
    if (cacheInputs_.size() != cacheOutputs_.size())
      throw UsageError(dir + ": " + std::to_string(cacheInputs_.size()) + " past_* inputs but " +
                       std::to_string(cacheOutputs_.size()) + " *_RetainedState outputs");
    for (const auto& combination : mappings_[inputIds_].ioShapes.allowedDims) {
      if (combination.size() != 2) continue;
      if (combination[0] != 1)
        throw UsageError(dir + ": buffer 'input_ids' has batch size " + std::to_string(combination[0]) +
                         "; llm-generate runs one sequence (compile with batch_size 1)");
      seqLens_.push_back(combination[1]);
    }
    if (seqLens_.empty()) throw UsageError(dir + ": buffer 'input_ids' is not [batch, seq_len]");
    specialized_ = mappings_[inputIds_].ioShapes.allowedDims.size() > 1;
  }

  bool accepts(std::size_t seqLen) const {
    return std::find(seqLens_.begin(), seqLens_.end(), static_cast<int64_t>(seqLen)) != seqLens_.end();
  }
  bool keepsCacheOnDevice() const { return cacheInputs_.empty(); }
  // A new sequence: a retained cache starts from zeros. Not needed for correct results (every
  // position a query attends to is written first), but a sequence then depends on nothing before.
  void startSequence() {
    if (keepsCacheOnDevice()) set_->resetRetainedState(0);
  }
  std::size_t vocab() const { return vocab_; }
  // Bytes between the user's buffers and the device in the last inference.
  uint64_t lastBytesMoved() const { return lastBytesMoved_; }
  const std::string& dir() const { return dir_; }

  // Sizes the host cache for this program, or checks that it fits one sized by another.
  void prepareCache(HostCache& cache) const {
    for (std::size_t index : cacheInputs_) {
      const BufferMapping& mapping = mappings_[index];
      auto& current = cache.current[mapping.bufferName];
      if (current.empty()) current.assign(mapping.size, 0);
      if (current.size() != mapping.size)
        throw UsageError(dir_ + ": buffer '" + mapping.bufferName + "' has " + std::to_string(mapping.size) +
                         " bytes, the other program's " + std::to_string(current.size()));
      cache.next[mapping.bufferName].assign(mapping.size, 0);
    }
    for (std::size_t index : cacheOutputs_) {
      const std::string& name = mappings_[index].bufferName;
      const std::string input = name.substr(0, name.size() - std::strlen(kRetainedSuffix));
      if (cache.current.count(input) == 0)
        throw UsageError(dir_ + ": output '" + name + "' has no input '" + input + "'");
      if (mappings_[index].size != cache.current[input].size())
        throw UsageError(dir_ + ": output '" + name + "' and input '" + input + "' differ in size");
    }
  }

  // One inference over tokens [ids] at [positions]; the last token's logits land in `logits`.
  void run(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions, HostCache& cache,
           std::vector<float>& logits) {
    const std::size_t seqLen = ids.size();
    shInferenceHandle handle;
    if (set_->getAvailable(handle, 10'000'000) != QS_SUCCESS) throw std::runtime_error(dir_ + ": no free handle");
    std::vector<QBuffer> buffers(mappings_.size());
    for (std::size_t i = 0; i < mappings_.size(); ++i) {
      const auto& mapping = mappings_[i];
      if (i == inputIds_ || i == positionIds_) {
        const auto& values = i == inputIds_ ? ids : positions;
        buffers[i] = QBuffer{values.size() * sizeof(int64_t),
                             reinterpret_cast<uint8_t*>(const_cast<int64_t*>(values.data()))};
      } else if (i == logits_) {
        logits.assign(mapping.size / sizeof(float), 0.0f);
        buffers[i] = QBuffer{logits.size() * sizeof(float), reinterpret_cast<uint8_t*>(logits.data())};
      } else if (std::find(cacheInputs_.begin(), cacheInputs_.end(), i) != cacheInputs_.end()) {
        auto& bytes = cache.current[mapping.bufferName];
        buffers[i] = QBuffer{bytes.size(), bytes.data()};
      } else if (std::find(cacheOutputs_.begin(), cacheOutputs_.end(), i) != cacheOutputs_.end()) {
        const std::string& name = mapping.bufferName;
        auto& bytes = cache.next[name.substr(0, name.size() - std::strlen(kRetainedSuffix))];
        buffers[i] = QBuffer{bytes.size(), bytes.data()};
      } else {
        // Any other buffer of the program gets zeros (or room for its output).
        storage_[i].assign(mapping.size, 0);
        buffers[i] = QBuffer{storage_[i].size(), storage_[i].data()};
      }
    }
    handle->setBuffers(buffers);
    if (specialized_) selectSpecialization(*handle, seqLen);
    set_->submit(handle, ++requestId_);
    const QStatus status = set_->getCompletedId(handle, requestId_, 60'000'000);
    const std::string message = status == QS_SUCCESS ? "" : handle->getErrorMessage();
    const TransferCounts moved = handle->getTransferCounts();
    lastBytesMoved_ = moved.hostCopiedBytes + moved.inPlaceBytes;
    set_->putCompleted(handle);
    if (status != QS_SUCCESS)
      throw std::runtime_error(dir_ + ": inference failed: " + statusName(status) + " " + message);
    if (!keepsCacheOnDevice()) std::swap(cache.current, cache.next);
    // A static program's logits hold one row; a specialized one fills its shape's rows.
    logits.resize(vocab_);
  }

 private:
  static bool endsWithRetained(const std::string& name) {
    const std::size_t suffix = std::strlen(kRetainedSuffix);
    return name.size() > suffix && name.compare(name.size() - suffix, suffix, kRetainedSuffix) == 0;
  }

  std::size_t find(const char* name, QAicBufferIoTypeEnum direction, QAicBufferDataTypeEnum type) const {
    for (std::size_t i = 0; i < mappings_.size(); ++i) {
      if (mappings_[i].bufferName != name) continue;
      if (mappings_[i].ioType != direction || mappings_[i].dataType != type)
        throw UsageError(dir_ + ": buffer '" + name + "' has the wrong direction or data type");
      return i;
    }
    throw UsageError(dir_ + ": the program has no buffer '" + name + "'");
  }

  // The allowed shape combination whose seq_len is this call's: every specialized buffer takes
  // its dims from that combination.
  void selectSpecialization(InferenceHandle& handle, std::size_t seqLen) const {
    const auto& combinations = mappings_[inputIds_].ioShapes.allowedDims;
    for (std::size_t c = 0; c < combinations.size(); ++c) {
      if (combinations[c].size() != 2 || combinations[c][1] != static_cast<int64_t>(seqLen)) continue;
      for (std::size_t i = 0; i < mappings_.size(); ++i) {
        const auto& allowed = mappings_[i].ioShapes.allowedDims;
        if (allowed.size() <= c) continue;
        handle.setBufferDims(static_cast<uint32_t>(i), std::vector<uint64_t>(allowed[c].begin(), allowed[c].end()));
      }
      return;
    }
    throw UsageError(dir_ + ": no specialization has seq_len " + std::to_string(seqLen));
  }

  std::string dir_;
  std::shared_ptr<Qpc> qpc_;
  v2::BufferMappings mappings_;
  std::shared_ptr<InferenceSet> set_;
  std::size_t inputIds_ = 0, positionIds_ = 0, logits_ = 0, vocab_ = 0;
  std::vector<std::size_t> cacheInputs_, cacheOutputs_;
  std::vector<int64_t> seqLens_;
  bool specialized_ = false;
  std::vector<std::vector<uint8_t>> storage_;
  uint64_t requestId_ = 0;
  uint64_t lastBytesMoved_ = 0;
};

int64_t argmax(const std::vector<float>& logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

void writeLogits(const std::string& dir, int step, const std::vector<float>& logits) {
  if (dir.empty()) return;
  const std::string path = dir + "/logits-" + std::to_string(step) + ".bin";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

struct Run {
  std::vector<int64_t> tokens;
  double prefillMs = 0;
  double decodeMs = 0;
  uint64_t prefillBytes = 0;
  uint64_t decodeBytesPerStep = 0;  // the largest of the steps
};

template <typename Field>
double median(std::vector<Run> runs, Field field) {
  std::sort(runs.begin(), runs.end(), [&](const Run& a, const Run& b) { return field(a) < field(b); });
  return field(runs[runs.size() / 2]);
}

// Prefill from position 0, then decode steps, on a cache reset for the sequence.
Run generateOnce(const Options& options, Decoder& prefill, Decoder& decode, HostCache& cache) {
  using Clock = std::chrono::steady_clock;
  Run run;
  std::vector<float> logits;
  decode.startSequence();
  const auto start = Clock::now();
  if (prefill.accepts(options.prompt.size())) {
    std::vector<int64_t> positions(options.prompt.size());
    for (std::size_t p = 0; p < positions.size(); ++p) positions[p] = static_cast<int64_t>(p);
    prefill.run(options.prompt, positions, cache, logits);
    run.prefillBytes = prefill.lastBytesMoved();
  } else {
    // No prefill shape for this prompt: it goes through the decode shape a token at a time.
    for (std::size_t p = 0; p < options.prompt.size(); ++p) {
      decode.run({options.prompt[p]}, {static_cast<int64_t>(p)}, cache, logits);
      run.prefillBytes += decode.lastBytesMoved();
    }
  }
  run.prefillMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  writeLogits(options.logitsDir, 0, logits);
  run.tokens.push_back(argmax(logits));
  const auto prefilled = Clock::now();
  int64_t position = static_cast<int64_t>(options.prompt.size());
  for (int step = 1; step < options.tokens; ++step, ++position) {
    decode.run({run.tokens.back()}, {position}, cache, logits);
    run.decodeBytesPerStep = std::max(run.decodeBytesPerStep, decode.lastBytesMoved());
    writeLogits(options.logitsDir, step, logits);
    run.tokens.push_back(argmax(logits));
  }
  run.decodeMs = std::chrono::duration<double, std::milli>(Clock::now() - prefilled).count();
  return run;
}

int generate(const Options& options) {
  std::shared_ptr<Context> context = Context::Factory(nullptr, options.devices);
  std::vector<std::unique_ptr<Decoder>> programs;
  for (const auto& dir : options.programDirs)
    programs.push_back(std::make_unique<Decoder>(context, dir, options.devices));
  Decoder& decode = *programs.back();
  Decoder& prefill = *programs.front();
  if (!decode.accepts(1))
    throw UsageError(decode.dir() + ": decoding needs seq_len 1, which the program does not take");
  if (programs.size() == 2 && !prefill.accepts(options.prompt.size()))
    throw UsageError(prefill.dir() + ": the prompt has " + std::to_string(options.prompt.size()) +
                     " tokens, the prefill program takes another seq_len");
  if (prefill.vocab() != decode.vocab()) throw UsageError("the two programs' logits differ in size");
  if (prefill.keepsCacheOnDevice() != decode.keepsCacheOnDevice())
    throw UsageError("one program retains the KV cache on the device and the other does not");
  if (programs.size() == 2 && decode.keepsCacheOnDevice())
    throw UsageError(
        "two programs cannot share a cache retained on the device (each activation has its own): "
        "compile one program with -network-specialization-config");
  HostCache cache;
  for (const auto& program : programs) program->prepareCache(cache);

  std::vector<Run> runs;
  for (int r = 0; r < options.repeat; ++r) {
    runs.push_back(generateOnce(options, prefill, decode, cache));
    if (runs.back().tokens != runs.front().tokens)
      throw std::runtime_error("run " + std::to_string(r + 1) + " generated other tokens than run 1");
  }
  const std::vector<int64_t>& tokens = runs.front().tokens;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    std::printf("%s%lld", i ? " " : "", static_cast<long long>(tokens[i]));
  std::printf("\n");
  const double prefillMs = median(runs, [](const Run& run) { return run.prefillMs; });
  std::printf("prefill: %zu tokens in %.3f ms, %llu bytes moved\n", options.prompt.size(), prefillMs,
              static_cast<unsigned long long>(runs.front().prefillBytes));
  if (tokens.size() > 1) {
    const double decodeMs = median(runs, [](const Run& run) { return run.decodeMs; });
    const std::size_t steps = tokens.size() - 1;
    std::printf("decode: %zu tokens in %.3f ms, %.1f tokens/s, %llu bytes moved per step\n", steps, decodeMs,
                static_cast<double>(steps) * 1e3 / decodeMs,
                static_cast<unsigned long long>(runs.front().decodeBytesPerStep));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return generate(parseOptions(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "llm-generate: error: %s\n", e.what());
    return 2;
  } catch (const qaic::rt::QpcError& e) {
    std::fprintf(stderr, "llm-generate: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm-generate: %s\n", e.what());
    return 1;
  }
}
