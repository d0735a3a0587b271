// SPDX-License-Identifier: Apache-2.0
// Test data produced at test time by a project script (ONNX node tests, torchvision models),
// cached in the build tree by file existence. Parallel ctest processes share one generation.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace qaic::conformance {

// $QAIC_BUILD_DIR / $QAIC_SOURCE_DIR as set by ctest, else the configured build and source trees.
std::string buildDir();
std::string sourceDir();

// Unless `outDir`/`stamp` exists, runs `/usr/bin/python3 <source>/scripts/<script> <outDir>
// args...` under an exclusive lock on `outDir`.lock. The script must write `stamp` last. Throws
// std::runtime_error if the lock is not obtained or the script does not finish within `timeout`
// (the script is then killed) or fails.
void ensureGenerated(const std::string& script, const std::string& outDir, const std::string& stamp,
                     std::chrono::seconds timeout, const std::vector<std::string>& args = {});

}  // namespace qaic::conformance
