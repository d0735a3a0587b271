// SPDX-License-Identifier: Apache-2.0
// batch-size: -batchsize rewrites dim 0 of the io buffers and of the allowed combinations.
#include <gtest/gtest.h>

#include "PassTestModels.hpp"
#include "Paths.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

Variant batchable() {
  const auto path = qaic::testing::sourceDir() / "tests/support/models/batchable.json";
  return testing::variantOf(ir::loadGraph(path.string()));
}

TEST(BatchSizePass, RewritesDimZeroOfBuffersAndCombinations) {
  ExecOptions options;
  options.batchSize = 3;
  Variant variant = batchable();
  batchSizePass(Compilation(options), variant);
  const ir::Graph& graph = variant.model.graph;
  EXPECT_EQ(graph.io[0].dims, (ir::Dims{3, 3, 8, 8}));
  EXPECT_EQ(graph.io[1].dims, (ir::Dims{3, 3, 8, 8}));
  ASSERT_EQ(graph.allowedShapes.size(), 1u);
  EXPECT_EQ(graph.allowedShapes[0][0], (ir::Dims{3, 3, 4, 8}));
}

TEST(BatchSizePass, WithoutTheOptionTheModelsBatchStays) {
  const ExecOptions options;
  Variant variant = batchable();
  batchSizePass(Compilation(options), variant);
  EXPECT_EQ(variant.model.graph.io[0].dims, (ir::Dims{1, 3, 8, 8}));
  EXPECT_EQ(variant.model.graph.allowedShapes[0][0], (ir::Dims{1, 3, 4, 8}));
}

}  // namespace
}  // namespace qaic::compiler
