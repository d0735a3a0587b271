// SPDX-License-Identifier: Apache-2.0
// custom-io-list: the list file's entries, read once.
#include <gtest/gtest.h>

#include <fstream>

#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(CustomIoListPass, ReadsTheEntries) {
  qaic::testing::TempDir dir("qaic-custom-io-list-pass");
  ExecOptions options;
  options.customIoListFile = (dir.path() / "io.yaml").string();
  std::ofstream(options.customIoListFile) << "- IOName: past\n  Precision: float16\n";
  Compilation compilation(options);
  customIoListPass(compilation);
  ASSERT_EQ(compilation.customIo.size(), 1u);
  EXPECT_EQ(compilation.customIo[0].name, "past");
  EXPECT_EQ(compilation.customIo[0].precision, ir::DType::Float16);
}

TEST(CustomIoListPass, WithoutTheOptionTheListIsEmpty) {
  const ExecOptions options;
  Compilation compilation(options);
  customIoListPass(compilation);
  EXPECT_TRUE(compilation.customIo.empty());
}

}  // namespace
}  // namespace qaic::compiler
