// SPDX-License-Identifier: Apache-2.0
// retained-state: the pairs leave the descriptor, stay flat in their type and become the
// container's retained-state entries; every specialization must give them one shape.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(RetainedStatePass, PairsBecomeRetainedEntries) {
  ExecOptions options;
  options.retainedState = true;
  Compilation compilation(options);
  compilation.variants.push_back(testing::retainedModel(2));
  compilation.variants[0].graph.io[1].deviceFormat = {ir::DeviceLayout::Flat, ir::DType::Float16};
  retainedStatePass(compilation);
  EXPECT_EQ(compilation.retained, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(compilation.variants[0].graph.io[1].deviceFormat.elementType, ir::DType::Float);
  ASSERT_EQ(compilation.contents.retainedState.size(), 1u);
  const container::QpcRetainedState& entry = compilation.contents.retainedState[0];
  EXPECT_EQ(entry.name, "cache");
  EXPECT_EQ(entry.stateName, "cache_RetainedState");
  EXPECT_EQ(entry.size, 16u);
}

TEST(RetainedStatePass, WithoutTheOptionNothingIsRetained) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.variants.push_back(testing::retainedModel(2));
  retainedStatePass(compilation);
  EXPECT_EQ(compilation.retained, (std::vector<bool>(4, false)));
  EXPECT_TRUE(compilation.contents.retainedState.empty());
}

TEST(RetainedStatePass, ASpecializationWithAnotherStateShapeIsRefused) {
  ExecOptions options;
  options.model = "m.onnx";
  options.retainedState = true;
  Compilation compilation(options);
  compilation.variants.push_back(testing::retainedModel(2, 4));
  compilation.variants.push_back(testing::retainedModel(1, 8));
  try {
    retainedStatePass(compilation);
    ADD_FAILURE() << "accepted two state shapes";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.onnx: -retained-state: 'cache' is [1,8] in specialization 1 but [1,4] in "
              "specialization 0; "
              "retained state has one shape");
  }
}

}  // namespace
}  // namespace qaic::compiler
