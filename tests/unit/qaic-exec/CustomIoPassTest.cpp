// SPDX-License-Identifier: Apache-2.0
// custom-io: the listed buffers take their precision through casts; no list, no change.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(CustomIoPass, ListedBuffersTakeTheirPrecision) {
  ExecOptions options;
  options.customIoListFile = "io.yaml";
  Compilation compilation(options);
  compilation.customIo = {{"x", ir::DType::Float16, 1}, {"y", ir::DType::Float16, 3}};
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  customIoPass(compilation, variant);
  const ir::Graph& graph = variant.model.graph;
  EXPECT_EQ(graph.io[0].dtype, ir::DType::Float16);
  EXPECT_EQ(graph.io[2].dtype, ir::DType::Float16);
  EXPECT_EQ(graph.io[1].dtype, ir::DType::Float);
  EXPECT_EQ(graph.ops.front().optype, "cast");
  EXPECT_EQ(graph.ops.back().optype, "cast");
}

TEST(CustomIoPass, WithoutAListTheNetworkIsUntouched) {
  const ExecOptions options;
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  customIoPass(Compilation(options), variant);
  EXPECT_EQ(variant.model.graph.ops.size(), 3u);
  EXPECT_EQ(variant.model.graph.io[0].dtype, ir::DType::Float);
}

TEST(CustomIoPass, AnUnknownBufferNamesTheListsLine) {
  ExecOptions options;
  options.customIoListFile = "io.yaml";
  Compilation compilation(options);
  compilation.customIo = {{"nosuch", ir::DType::Float16, 7}};
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  try {
    customIoPass(compilation, variant);
    ADD_FAILURE() << "accepted an unknown buffer";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("io.yaml:7: IOName 'nosuch'", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace qaic::compiler
