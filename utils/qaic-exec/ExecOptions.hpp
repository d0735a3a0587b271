// SPDX-License-Identifier: Apache-2.0
// The qaic-exec command line (vendor spelling: single dash, `=` before values).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "Fp16IoFormats.hpp"

namespace qaic::compiler {

struct ExecOptions {
  std::string model;                               // -m=net.json | model.onnx
  std::string binaryDir;                           // -aic-binary-dir=DIR
  uint32_t numCores = 1;                           // -aic-num-cores=N
  int64_t batchSize = 0;                           // -batchsize=B (0: keep the model's)
  bool convertToFp16 = false;                      // -convert-to-fp16
  bool mxfp6Matmul = false;                        // -mxfp6-matmul
  Fp16IoLayout fp16IoLayout = Fp16IoLayout::DWHC;  // -fp16-io-layout=DWHC|DHWC|flat
  bool aicHw = false;                              // -aic-hw
  bool compileOnly = false;                        // -compile-only
  std::string hwVersion;                           // -aic-hw-version=2.0|ai100 (validated; the device is an AIC100)
  uint32_t statsBatchSize = 0;         // -stats-batchsize=N: samples per inference for stats (0: the batch size)
  std::string operatorsSupportedFile;  // -operators-supported=FILE
  std::map<std::string, int64_t> onnxSymbols;  // -onnx-define-symbol=name,value
  bool retainedState = false;                  // -retained-state[=true|false]
  std::string specializationConfig;            // -network-specialization-config=FILE
  std::string customIoListFile;                // -custom-IO-list-file=FILE
  std::string partitionConfig;                 // -mdp-load-partition-config=FILE
  std::string dumpPartitionConfig;             // -mdp-dump-partition-config=FILE
  uint32_t pipelineStages = 0;                 // -mdp-pipeline-stages=N (0: not given)
  bool allowMxint8MdpIo = false;               // -allow-mxint8-mdp-io: MXINT8 between the cards
  bool verbose = false;                        // -v: the tensor slicing report too
  std::vector<std::string> ignored;            // compatibility options without meaning on the emulator
  bool help = false;                           // -h | --help
  bool version = false;                        // --version
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws UsageError naming the option for an unknown option, a missing or malformed value,
// or (unless help, --version or -operators-supported alone is asked for) a missing -m /
// -aic-binary-dir.
ExecOptions parseExecOptions(std::span<const std::string> args);

// `program` is the name the tool was started as (qaic-exec or qaic-compile).
std::string execHelpText(const std::string& program = "qaic-exec");

}  // namespace qaic::compiler
