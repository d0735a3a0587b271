// SPDX-License-Identifier: Apache-2.0
#include "ExecOptions.hpp"

#include <algorithm>
#include <charconv>

namespace qaic::compiler {

namespace {

int64_t parseInteger(const std::string& option, const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    throw UsageError("option " + option + ": '" + text + "' is not an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return value;
}

// Vendor options a script may pass that change nothing on the emulated device; each is accepted
// (and its value checked for presence) and --help lists it as such, so nothing is silent.
struct CompatibilityOption {
  const char* name;
  const char* value;  // nullptr: a flag
  const char* meaning;
};
constexpr CompatibilityOption kCompatibilityOptions[] = {
    {"-mos", "<n>", "maximum output channel split (a hardware tiling choice)"},
    {"-ols", "<n>", "overlap split factor (a hardware tiling choice)"},
    {"-mdts-mos", "<n>", "multi-device tensor split (one device here)"},
    {"-size-split-granularity", "<n>", "tile size for splitting (a hardware tiling choice)"},
    {"-multicast-weights", nullptr, "multicast constants to the NSPs (one copy serves all here)"},
    {"-aic-enable-depth-first", nullptr, "depth-first scheduling (the host kernels run layer by layer)"},
    {"-aic-depth-first-mem", "<mb>", "memory for depth-first scheduling"},
    {"-user-tiled", nullptr, "user-tiled layouts"},
    {"-stats-level", "<n>", "device statistics level"},
    {"-ddr-stats", nullptr, "DDR statistics"},
    {"-time-passes", nullptr, "compiler pass timing"},
    {"-aic-perf-metrics", nullptr, "performance metrics"},
    {"-aic-perf-warnings", nullptr, "performance warnings"},
    {"-aic-pmu-recipe", "<recipe>", "PMU counter recipe"},
    {"-aic-num-of-instances", "<n>", "instances for the compiler's own test run (qaic-exec never runs)"},
    {"-num-iter", "<n>", "iterations of the compiler's own test run"},
    {"-vtcm-working-set-limit-ratio", "<r>", "on-chip memory budget (a hardware tiling choice)"},
    {"-allocator-dealloc-delay", "<n>", "on-chip buffer reuse distance (a hardware tiling choice)"},
    {"-aic-enable-depth-first-search", nullptr, "depth-first scheduling (as -aic-enable-depth-first)"},
};

const CompatibilityOption* findCompatibilityOption(const std::string& name) {
  for (const auto& option : kCompatibilityOptions)
    if (name == option.name) return &option;
  return nullptr;
}

}  // namespace

ExecOptions parseExecOptions(std::span<const std::string> args) {
  ExecOptions options;
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const bool hasValue = eq != std::string::npos;
    const std::string value = hasValue ? arg.substr(eq + 1) : std::string();
    auto requireValue = [&] {
      if (!hasValue || value.empty()) throw UsageError("option " + name + " needs a value (" + name + "=...)");
    };
    auto requireFlag = [&] {
      if (hasValue) throw UsageError("option " + name + " takes no value");
    };
    if (name == "-h" || name == "--help" || name == "-help") {
      requireFlag();
      options.help = true;
    } else if (name == "--version" || name == "-version") {
      requireFlag();
      options.version = true;
    } else if (name == "-m") {
      requireValue();
      options.model = value;
    } else if (name == "-aic-binary-dir") {
      requireValue();
      options.binaryDir = value;
    } else if (name == "-aic-num-cores") {
      requireValue();
      options.numCores = static_cast<uint32_t>(parseInteger(name, value, 1, 16));
    } else if (name == "-batchsize") {
      requireValue();
      options.batchSize = parseInteger(name, value, 1, 1 << 20);
    } else if (name == "-stats-batchsize") {
      requireValue();
      options.statsBatchSize = static_cast<uint32_t>(parseInteger(name, value, 1, 1 << 20));
    } else if (name == "-convert-to-fp16") {
      requireFlag();
      options.convertToFp16 = true;
    } else if (name == "-mxfp6-matmul") {
      requireFlag();
      options.mxfp6Matmul = true;
    } else if (name == "-fp16-io-layout") {
      requireValue();
      if (value == "DWHC" || value == "dwhc")
        options.fp16IoLayout = Fp16IoLayout::DWHC;
      else if (value == "DHWC" || value == "dhwc")
        options.fp16IoLayout = Fp16IoLayout::DHWC;
      else if (value == "flat")
        options.fp16IoLayout = Fp16IoLayout::Flat;
      else
        throw UsageError("option -fp16-io-layout: '" + value + "' is not a layout (DWHC, DHWC or flat)");
    } else if (name == "-aic-hw") {
      requireFlag();
      options.aicHw = true;
    } else if (name == "-aic-hw-version") {
      requireValue();
      // The vendor spells the AIC100 generation 2.0 (older tools) or ai100 (newer ones).
      if (value != "2.0" && value != "ai100" && value != "AI100")
        throw UsageError("option -aic-hw-version: '" + value +
                         "' is not a target; the emulated device is an AIC100 (2.0 or ai100)");
      options.hwVersion = value;
    } else if (name == "-compile-only") {
      requireFlag();
      options.compileOnly = true;
    } else if (name == "-operators-supported") {
      requireValue();
      options.operatorsSupportedFile = value;
    } else if (name == "-retained-state") {
      // Vendor scripts also write -retained-state=true.
      if (hasValue && value != "true" && value != "false" && value != "1" && value != "0")
        throw UsageError("option -retained-state: '" + value + "' is not true or false");
      options.retainedState = !hasValue || value == "true" || value == "1";
    } else if (name == "-network-specialization-config") {
      requireValue();
      options.specializationConfig = value;
    } else if (name == "-custom-IO-list-file") {
      requireValue();
      options.customIoListFile = value;
    } else if (name == "-mdp-load-partition-config") {
      requireValue();
      options.partitionConfig = value;
    } else if (name == "-mdp-dump-partition-config") {
      requireValue();
      options.dumpPartitionConfig = value;
    } else if (name == "-allow-mxint8-mdp-io") {
      requireFlag();
      options.allowMxint8MdpIo = true;
    } else if (name == "-v") {
      requireFlag();
      options.verbose = true;
    } else if (name == "-mdp-pipeline-stages") {
      requireValue();
      options.pipelineStages = static_cast<uint32_t>(parseInteger(name, value, 1, 16));
    } else if (name == "-onnx-define-symbol") {
      requireValue();
      const auto comma = value.find(',');
      if (comma == std::string::npos || comma == 0) {
        throw UsageError("option -onnx-define-symbol: expected name,value, got '" + value + "'");
      }
      options.onnxSymbols[value.substr(0, comma)] = parseInteger(name, value.substr(comma + 1), 1, INT64_C(1) << 40);
    } else if (const CompatibilityOption* compatibility = findCompatibilityOption(name)) {
      if (compatibility->value)
        requireValue();
      else
        requireFlag();
      options.ignored.push_back(name);
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  if (!options.partitionConfig.empty() && options.pipelineStages != 0)
    throw UsageError("options -mdp-load-partition-config and -mdp-pipeline-stages both give the devices; use one");
  const bool listOnly = !options.operatorsSupportedFile.empty() && options.model.empty() && options.binaryDir.empty();
  if (!options.help && !options.version && !listOnly) {
    if (options.model.empty()) throw UsageError("missing -m=<model> (see --help)");
    if (options.binaryDir.empty()) throw UsageError("missing -aic-binary-dir=<dir> (see --help)");
  }
  return options;
}

std::string execHelpText(const std::string& program) {
  std::string text = "Usage: " + program + R"( -m=<model> -aic-binary-dir=<dir> [options]
  or:  )" + program + R"( -operators-supported=<file>

Compiles a network into a program container, <dir>/programqpc.bin. qaic-exec and qaic-compile
are the same program.

Options:
  -m=<model>                 the network: a JSON IR file (.json, with its weights side file and
                             an "io" section) or an ONNX model (.onnx)
  -aic-binary-dir=<dir>      where programqpc.bin is written (created if missing; the file is
                             replaced atomically, nothing is left behind on error)
  -aic-num-cores=<n>         NSP cores the program runs on, 1..16 (default 1)
  -batchsize=<b>             sets dim 0 of every io buffer to b and re-infers every shape
  -stats-batchsize=<b>       samples one inference processes, as qaic-runner reports it (BatchSize
                             and Inf/Sec); default: -batchsize, else 1
  -convert-to-fp16           stores float constants as float16 and gives float io buffers the
                             device's native formats (seed 003): inputs read by a convolution
                             (rank 4, or [N,C,L] of a 1-D one) in DWHC float16, other inputs flat
                             float16, outputs of rank 4 or of a convolution DWHC float, other
                             outputs flat float; the runtime converts
  -mxfp6-matmul              stores each 2-D float constant read only as a MatMul's second input
                             or a Gemm's B (trans_a 0) as MXFP6 (docs/formats/mxfp6.md); the
                             kernels multiply with it in place, computing in float
  -fp16-io-layout=<layout>   with -convert-to-fp16: DWHC (default), DHWC (the transposed layout)
                             or flat (io buffers stay flat in the user's type)
  -onnx-define-symbol=<name>,<value>
                             value of a symbolic ONNX dimension (repeatable)
  -retained-state            every output <X>_RetainedState whose input <X> has the same dtype and
                             dims becomes device-resident state: zeros at activation, read as <X>
                             by the next inference of the same activation, updated in place, and
                             left out of the buffer mappings; a mismatched pair is an error
  -network-specialization-config=<file>
                             JSON {"specializations": [{"seq_len": "32", ...}, ...]}: each entry
                             binds ONNX symbolic dims and is compiled as one allowed shape
                             combination, chosen at run time by the IO set's dims
  -custom-IO-list-file=<file>
                             the vendor's custom IO list (YAML items "- IOName: <buffer>" and
                             "  Precision: float16"): each listed float buffer is given to the user
                             in that precision, cast from / to float at the network's boundary
                             (efficient-transformers keeps a decoder's KV cache in float16 so)
  -mdp-load-partition-config=<file>
                             the vendor's multi-device partition config (JSON;
                             docs/formats/partition-config.md), every error naming the field.
                             One partition of N >= 2 devices splits the network over them by
                             tensor slicing: the MatMul/Gemm/Conv weights divided, attention
                             and the retained KV cache by heads, the rest replicated. Several
                             partitions of one device each are pipeline stages: partition s
                             runs its "nodeList" (or, without one, a range of the graph
                             balanced by weight bytes) on its device, the tensors crossing a
                             stage boundary sent card to card. programqpc.bin then holds one
                             part per device (qaic-util shows them with its qpc option)
  -allow-mxint8-mdp-io       the activations a tensor-sliced program's cards exchange travel as
                             MXINT8 (docs/formats/mxint8.md): each card quantizes its float or
                             float16 contribution before sending and every card sums the
                             dequantized contributions in card order (the same bits on every
                             card); a little under 1/4 of the float32 bytes between cards, each
                             value within 1/64 of its block's largest magnitude. No effect on a
                             one-device program or on what pipeline stages send
  -mdp-pipeline-stages=<n>   n consecutive stages of the graph, balanced by weight bytes, stage
                             s on device s with -aic-num-cores NSPs (1: one device; at most 16;
                             not with -mdp-load-partition-config)
  -mdp-dump-partition-config=<file>
                             write the partition config used: the loaded one (a pipeline's with
                             each stage's nodeList), else that of -mdp-pipeline-stages or one
                             device with -aic-num-cores NSPs; written after programqpc.bin,
                             only when the compile succeeds
  -operators-supported=<file>
                             write the ONNX operators the importer supports to <file>, one per
                             line; alone, or before compiling when -m is given too
  -aic-hw                    target the device (the emulated device is the only target, so this
                             is always the case)
  -aic-hw-version=<v>        the target's generation: 2.0 or ai100 (AIC100, the emulated device);
                             any other is an error
  -compile-only              only compile (qaic-exec never runs the network)
  -v                         also print the tensor slicing report of a multi-device compile
                             (each weight split or kept whole and why, each collective's bytes)
  -h, --help                 this text
  --version                  print the version and exit

Accepted for compatibility, without effect on the emulated device:
)";
  for (const auto& option : kCompatibilityOptions) {
    std::string left = std::string("  ") + option.name + (option.value ? std::string("=") + option.value : "");
    left.resize(std::max<std::size_t>(left.size() + 1, 29), ' ');
    text += left + option.meaning + "\n";
  }
  text += R"(
Exit status: 0 on success; 2 on bad input (the message, one line, starts with
")" + program +
          R"(: error: "); 1 on an internal error.
)";
  return text;
}

}  // namespace qaic::compiler
