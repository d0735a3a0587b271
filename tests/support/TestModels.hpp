// SPDX-License-Identifier: Apache-2.0
// Stages tests/support/models/<name>.json for a compile in a test's temporary directory
// (the weights side file, when the IR names one, is generated there).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "IrGraphs.hpp"
#include "Paths.hpp"

namespace qaic::container::testing {

inline std::filesystem::path sourceDataDir() { return qaic::testing::sourceDir() / "tests/support/models"; }

// The tiny.weights tensor the tiny.json IR reads: bias b = [0.5, -1, 2, -3].
inline void writeTinyWeights(const std::filesystem::path& dir) {
  static const float values[] = {0.5f, -1.0f, 2.0f, -3.0f};
  ir::WeightTensor bias{"b", ir::DType::Float, {1, 4}, std::as_bytes(std::span(values))};
  ir::writeWeightsFile((dir / "tiny.weights").string(), std::span(&bias, 1));
}

// Copies the IR into `dir` (with tiny.weights when needed) and returns the copy's path.
inline std::string stageModel(const std::string& name, const std::filesystem::path& dir) {
  const auto target = dir / (name + ".json");
  std::filesystem::copy_file(sourceDataDir() / (name + ".json"), target,
                             std::filesystem::copy_options::overwrite_existing);
  if (name == "tiny") writeTinyWeights(dir);
  return target.string();
}

}  // namespace qaic::container::testing
