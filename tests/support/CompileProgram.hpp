// SPDX-License-Identifier: Apache-2.0
// The one way a test compiles a program: the real qaic-exec from the build, run as a child
// process on a model file (JSON IR or ONNX) into a program directory. Only the qaic-exec suites
// build qaic-exec command lines of their own (they test the command line itself).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "Process.hpp"

namespace qaic::testing {

// qaic-exec -m=<model> -aic-binary-dir=<programDir> <options...>, its output captured; for tests
// that assert on a refusal.
RunResult runCompiler(const std::filesystem::path& model, const std::filesystem::path& programDir,
                      const std::vector<std::string>& options = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

// runCompiler that must succeed: throws std::runtime_error naming the model, with qaic-exec's
// exit and its output, when it does not.
void compileProgram(const std::filesystem::path& model, const std::filesystem::path& programDir,
                    const std::vector<std::string>& options = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace qaic::testing
