// SPDX-License-Identifier: Apache-2.0
// default-specialization: full dims are each buffer's largest; the program's own graph is the
// specialization that has them all, else the first.
#include <gtest/gtest.h>

#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(DefaultSpecializationPass, TheSpecializationWithTheLargestDimsIsTheDefault) {
  const ExecOptions options;
  Compilation compilation(options);
  for (int64_t rows : {2, 6, 4}) compilation.variants.push_back(testing::twoPathModel(rows));
  defaultSpecializationPass(compilation);
  EXPECT_EQ(compilation.mainVariant, 1u);
  ASSERT_EQ(compilation.fullDims.size(), 4u);
  EXPECT_EQ(compilation.fullDims[0], (ir::Dims{6, 4}));
  EXPECT_EQ(compilation.fullDims[1], (ir::Dims{1, 4}));
}

TEST(DefaultSpecializationPass, WithoutOneHavingEveryLargestDimTheFirstIsTheDefault) {
  const ExecOptions options;
  Compilation compilation(options);
  for (int64_t rows : {2, 6}) compilation.variants.push_back(testing::twoPathModel(rows));
  compilation.variants[0].graph.io[1].dims = {3, 4};  // z larger in the first, x in the second
  defaultSpecializationPass(compilation);
  EXPECT_EQ(compilation.mainVariant, 0u);
  EXPECT_EQ(compilation.fullDims[0], (ir::Dims{6, 4}));
  EXPECT_EQ(compilation.fullDims[1], (ir::Dims{3, 4}));
}

}  // namespace
}  // namespace qaic::compiler
