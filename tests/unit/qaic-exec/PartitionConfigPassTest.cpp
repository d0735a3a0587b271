// SPDX-License-Identifier: Apache-2.0
// partition-config: the loaded config, else one device (-mdp-pipeline-stages=1 too), else
// -mdp-pipeline-stages=N's stages of one device each.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileError.hpp"
#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(PartitionConfigPass, WithoutOptionsOneDeviceWithTheProgramsCores) {
  ExecOptions options;
  options.numCores = 4;
  Compilation compilation(options);
  partitionConfigPass(compilation);
  EXPECT_EQ(compilation.partitionConfig, uniformPartitionConfig(1, 4));
  EXPECT_EQ(compilation.summary.partitionDevices, 1u);
}

TEST(PartitionConfigPass, OnePipelineStageIsOneDevice) {
  ExecOptions options;
  options.numCores = 2;
  options.pipelineStages = 1;
  Compilation compilation(options);
  partitionConfigPass(compilation);
  EXPECT_EQ(compilation.partitionConfig, uniformPartitionConfig(1, 2));
  EXPECT_EQ(compilation.summary.partitionDevices, 1u);
}

TEST(PartitionConfigPass, PipelineStagesAreOneDeviceEach) {
  ExecOptions options;
  options.numCores = 2;
  options.pipelineStages = 3;
  Compilation compilation(options);
  partitionConfigPass(compilation);
  EXPECT_EQ(compilation.partitionConfig, pipelinePartitionConfig(3, 2));
  EXPECT_TRUE(compilation.partitionConfig.pipelined());
  EXPECT_EQ(compilation.summary.partitionDevices, 3u);
}

TEST(PartitionConfigPass, ReadsAndChecksTheLoadedConfig) {
  qaic::testing::TempDir dir("qaic-partition-config-pass");
  ExecOptions options;
  options.partitionConfig = (dir.path() / "mdp.json").string();
  std::ofstream(options.partitionConfig) << partitionConfigJson(uniformPartitionConfig(2, 16));
  Compilation compilation(options);
  partitionConfigPass(compilation);
  EXPECT_EQ(compilation.partitionConfig, uniformPartitionConfig(2, 16));

  std::ofstream(options.partitionConfig, std::ios::trunc) << R"({"partitions": []})";
  Compilation refused(options);
  try {
    partitionConfigPass(refused);
    ADD_FAILURE() << "accepted a config without a partition";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              options.partitionConfig + ": partitions: expected at least one partition, got none");
  }
}

}  // namespace
}  // namespace qaic::compiler
