// SPDX-License-Identifier: Apache-2.0
#include "Paths.hpp"

#include <cstdlib>

namespace qaic::testing {

namespace {

std::filesystem::path fromEnvironment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

std::filesystem::path buildDir() { return fromEnvironment("QAIC_BUILD_DIR", QAIC_DEFAULT_BUILD_DIR); }
std::filesystem::path sourceDir() { return fromEnvironment("QAIC_SOURCE_DIR", QAIC_DEFAULT_SOURCE_DIR); }
std::filesystem::path programPath(const std::string& name) { return buildDir() / "bin" / name; }

}  // namespace qaic::testing
