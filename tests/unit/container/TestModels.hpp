// Stages tests/unit/container/data/<name>.json for a compile in a fresh
// temporary directory (the weights side file, when the IR names one, is generated here).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/Weights.hpp"

namespace qaic::container::testing {

// QAIC_SOURCE_DIR / QAIC_BUILD_DIR come from ctest; the compiled-in paths serve a test binary
// started by hand.
inline std::string sourceDir() {
  const char* source = std::getenv("QAIC_SOURCE_DIR");
  return source ? source : QAIC_TEST_SOURCE_DIR;
}

inline std::string buildDir() {
  const char* build = std::getenv("QAIC_BUILD_DIR");
  return build ? build : QAIC_TEST_BUILD_DIR;
}

inline std::filesystem::path sourceDataDir() {
  return std::filesystem::path(sourceDir()) / "tests/unit/container/data";
}

// The tiny.weights tensor the tiny.json IR reads: bias b = [0.5, -1, 2, -3].
inline void writeTinyWeights(const std::filesystem::path& dir) {
  static const float values[] = {0.5f, -1.0f, 2.0f, -3.0f};
  ir::WeightTensor bias{"b", ir::DType::Float, {1, 4}, std::as_bytes(std::span(values))};
  ir::writeWeightsFile((dir / "tiny.weights").string(), std::span(&bias, 1));
}

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("qaic-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Copies the IR into `dir` (with tiny.weights when needed) and returns the copy's path.
inline std::string stageModel(const std::string& name, const std::filesystem::path& dir) {
  const auto target = dir / (name + ".json");
  std::filesystem::copy_file(sourceDataDir() / (name + ".json"), target,
                             std::filesystem::copy_options::overwrite_existing);
  if (name == "tiny") writeTinyWeights(dir);
  return target.string();
}

}  // namespace qaic::container::testing
