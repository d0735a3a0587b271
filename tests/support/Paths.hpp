// SPDX-License-Identifier: Apache-2.0
// Where a suite finds what the build made: $QAIC_BUILD_DIR and $QAIC_SOURCE_DIR (ctest sets them),
// else the trees this build was configured with (a test binary run by hand).
#pragma once

#include <filesystem>
#include <string>

namespace qaic::testing {

std::filesystem::path buildDir();
std::filesystem::path sourceDir();
// A program the build made: buildDir()/bin/<name> (qaic-emu, qaicd, qaic-exec, ...).
std::filesystem::path programPath(const std::string& name);

}  // namespace qaic::testing
