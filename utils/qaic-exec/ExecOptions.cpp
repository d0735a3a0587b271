#include "ExecOptions.hpp"

#include <charconv>

namespace qaic::compiler {

namespace {

int64_t parseInteger(const std::string& option, const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    throw UsageError("option " + option + ": '" + text + "' is not an integer in [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
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
    } else if (name == "-convert-to-fp16") {
      requireFlag();
      options.convertToFp16 = true;
    } else if (name == "-aic-hw") {
      requireFlag();
      options.aicHw = true;
    } else if (name == "-compile-only") {
      requireFlag();
      options.compileOnly = true;
    } else if (name == "-onnx-define-symbol") {
      requireValue();
      const auto comma = value.find(',');
      if (comma == std::string::npos || comma == 0) {
        throw UsageError("option -onnx-define-symbol: expected name,value, got '" + value + "'");
      }
      options.onnxSymbols[value.substr(0, comma)] =
          parseInteger(name, value.substr(comma + 1), 1, INT64_C(1) << 40);
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  if (!options.help) {
    if (options.model.empty()) throw UsageError("missing -m=<model> (see --help)");
    if (options.binaryDir.empty()) throw UsageError("missing -aic-binary-dir=<dir> (see --help)");
  }
  return options;
}

std::string execHelpText() {
  return R"(Usage: qaic-exec -m=<model> -aic-binary-dir=<dir> [options]

Compiles a network into a program container, <dir>/programqpc.bin.

  -m=<model>                 the network: a JSON IR file (.json, with its weights side file and
                             an "io" section) or an ONNX model (.onnx)
  -aic-binary-dir=<dir>      where programqpc.bin is written (created if missing; the file is
                             replaced atomically, nothing is left behind on error)
  -aic-num-cores=<n>         NSP cores the program runs on, 1..16 (default 1)
  -batchsize=<b>             sets dim 0 of every io buffer to b and re-infers every shape
  -convert-to-fp16           stores float constants as float16 and marks the program
  -aic-hw                    target the device (accepted for compatibility; the emulated device
                             is the only target, so this is always the case)
  -compile-only              only compile (accepted for compatibility; qaic-exec never runs the
                             network)
  -onnx-define-symbol=<name>,<value>
                             value of a symbolic ONNX dimension (repeatable)
  -h, --help                 this text

Exit status: 0 on success, 2 on bad input (the message, one line, starts with
"qaic-exec: error: "), 1 on an internal error.
)";
}

}  // namespace qaic::compiler
