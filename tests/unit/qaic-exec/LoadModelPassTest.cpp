// SPDX-License-Identifier: Apache-2.0
// load-model: the JSON IR and its weights side file, loaded for the variant.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "IrGraphs.hpp"
#include "PassTestModels.hpp"
#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(LoadModelPass, LoadsTheIrAndItsWeights) {
  qaic::testing::TempDir dir("qaic-load-model-pass");
  const std::string json = testing::twoPathJson(2);
  const std::string withWeights = "{\"weights\": \"net.weights\", " + json.substr(1);
  std::ofstream(dir.path() / "net.json") << withWeights;
  static const float bias[] = {0.5f, -1.0f, 2.0f, -3.0f};
  const ir::WeightTensor b{"b", ir::DType::Float, {1, 4}, std::as_bytes(std::span(bias))};
  ir::writeWeightsFile((dir.path() / "net.weights").string(), std::span(&b, 1));

  ExecOptions options;
  options.model = (dir.path() / "net.json").string();
  const Compilation compilation(options);
  Variant variant;
  loadModelPass(compilation, variant);
  EXPECT_EQ(variant.model.graph.io.size(), 4u);
  EXPECT_EQ(variant.model.graph.ops.size(), 3u);
  ASSERT_EQ(variant.model.weights.size(), 1u);
  EXPECT_EQ(variant.model.weights[0].name, "b");
  ASSERT_EQ(variant.model.weights[0].data.size(), sizeof(bias));
  EXPECT_EQ(std::memcmp(variant.model.weights[0].data.data(), bias, sizeof(bias)), 0);
}

TEST(LoadModelPass, AMissingModelIsNamed) {
  qaic::testing::TempDir dir("qaic-load-model-pass");
  ExecOptions options;
  options.model = (dir.path() / "absent.json").string();
  const Compilation compilation(options);
  Variant variant;
  try {
    loadModelPass(compilation, variant);
    ADD_FAILURE() << "loaded a missing file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(options.model), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qaic::compiler
