// SPDX-License-Identifier: Apache-2.0
// infer-shapes: every tensor's dims from the io buffers; a shape error names the op.
#include <gtest/gtest.h>

#include "PassTestModels.hpp"
#include "Paths.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(InferShapesPass, FillsEveryTensor) {
  Variant variant = testing::variantOf(ir::parseGraph(testing::twoPathJson(5), "net.json"));
  const ExecOptions options;
  inferShapesPass(Compilation(options), variant);
  const auto& tensors = variant.model.graph.tensors;
  ASSERT_TRUE(tensors.contains("y"));
  EXPECT_EQ(tensors.at("y").dims, (ir::Dims{5, 4}));
  ASSERT_TRUE(tensors.contains("b"));
  EXPECT_EQ(tensors.at("b").dims, (ir::Dims{1, 4}));
}

TEST(InferShapesPass, AShapeErrorNamesTheOp) {
  const auto path = qaic::testing::sourceDir() / "tests/support/models/bad_shape.json";
  Variant variant = testing::variantOf(ir::loadGraph(path.string()));
  const ExecOptions options;
  try {
    inferShapesPass(Compilation(options), variant);
    ADD_FAILURE() << "inferred a bad shape";
  } catch (const ir::IrError& e) {
    EXPECT_EQ(e.opName(), "cut") << e.what();
  }
}

}  // namespace
}  // namespace qaic::compiler
