// SPDX-License-Identifier: Apache-2.0
#include "CompileProgram.hpp"

#include <stdexcept>

namespace qaic::testing {

RunResult runCompiler(const std::filesystem::path& model, const std::filesystem::path& programDir,
                      const std::vector<std::string>& options, std::chrono::milliseconds timeout) {
  std::vector<std::string> args = {"-m=" + model.string(), "-aic-binary-dir=" + programDir.string()};
  args.insert(args.end(), options.begin(), options.end());
  return runTool("qaic-exec", args, timeout);
}

void compileProgram(const std::filesystem::path& model, const std::filesystem::path& programDir,
                    const std::vector<std::string>& options, std::chrono::milliseconds timeout) {
  const RunResult result = runCompiler(model, programDir, options, timeout);
  if (result.exitCode != 0) {
    throw std::runtime_error("qaic-exec failed on " + model.string() + " (exit " + std::to_string(result.exitCode) +
                             "): " + result.err + result.out);
  }
}

}  // namespace qaic::testing
