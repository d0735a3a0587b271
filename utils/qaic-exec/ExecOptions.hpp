// The qaic-exec command line (vendor spelling: single dash, `=` before values).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>

namespace qaic::compiler {

struct ExecOptions {
  std::string model;             // -m=net.json | model.onnx
  std::string binaryDir;         // -aic-binary-dir=DIR
  uint32_t numCores = 1;         // -aic-num-cores=N
  int64_t batchSize = 0;         // -batchsize=B (0: keep the model's)
  bool convertToFp16 = false;    // -convert-to-fp16
  bool aicHw = false;            // -aic-hw
  bool compileOnly = false;      // -compile-only
  std::map<std::string, int64_t> onnxSymbols;  // -onnx-define-symbol=name,value
  bool help = false;             // -h | --help
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws UsageError naming the option for an unknown option, a missing or malformed value,
// or (unless help is asked for) a missing -m / -aic-binary-dir.
ExecOptions parseExecOptions(std::span<const std::string> args);

std::string execHelpText();

}  // namespace qaic::compiler
