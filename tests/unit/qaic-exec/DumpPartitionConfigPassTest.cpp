// SPDX-License-Identifier: Apache-2.0
// dump-partition-config: writes the compile's config to -mdp-dump-partition-config, nothing
// without it.
#include <gtest/gtest.h>

#include <filesystem>

#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(DumpPartitionConfigPass, WritesTheConfigUsed) {
  qaic::testing::TempDir dir("qaic-dump-partition-config-pass");
  ExecOptions options;
  options.dumpPartitionConfig = (dir.path() / "used.json").string();
  Compilation compilation(options);
  compilation.partitionConfig = uniformPartitionConfig(2, 8);
  dumpPartitionConfigPass(compilation);
  EXPECT_EQ(readPartitionConfig(options.dumpPartitionConfig), uniformPartitionConfig(2, 8));
}

TEST(DumpPartitionConfigPass, WritesNothingWithoutTheOption) {
  qaic::testing::TempDir dir("qaic-dump-partition-config-pass");
  ExecOptions options;
  Compilation compilation(options);
  compilation.partitionConfig = uniformPartitionConfig(2, 8);
  dumpPartitionConfigPass(compilation);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace qaic::compiler
