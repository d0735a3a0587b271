// SPDX-License-Identifier: Apache-2.0
// constant-table: the program's constants, then the specializations' own, numbered in order.
#include <gtest/gtest.h>

#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

container::QpcConstant named(const std::string& name) {
  container::QpcConstant constant;
  constant.index = 99;
  constant.tensor.name = name;
  return constant;
}

TEST(ConstantTablePass, SharedConstantsAreLeftOutAndTheRestNumbered) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.constants.constants = {named("a"), named("b")};
  compilation.extraConstants.resize(2);
  compilation.extraConstants[0].constants = {named(""), named("b@specialization0")};
  compilation.extraConstants[1].constants = {named("c")};
  constantTablePass(compilation);
  const auto& table = compilation.contents.constants;
  ASSERT_EQ(table.size(), 4u);
  const char* names[] = {"a", "b", "b@specialization0", "c"};
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].tensor.name, names[i]);
    EXPECT_EQ(table[i].index, i);
  }
}

}  // namespace
}  // namespace qaic::compiler
