// SPDX-License-Identifier: Apache-2.0
// program: the container's program entry from what the earlier passes produced.
#include <gtest/gtest.h>

#include "IoLayout.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(ProgramPass, DescribesTheProgram) {
  ExecOptions options;
  options.model = "/models/decoder.onnx";
  options.numCores = 4;
  options.batchSize = 8;
  options.convertToFp16 = true;
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2));
  compilation.variants.push_back(testing::twoPathModel(4));
  compilation.mainVariant = 1;
  compilation.contents.buffers.resize(2);
  compilation.contents.buffers[1].index = 1;
  compilation.ioRegionSize = 20480;
  compilation.summary.constantBytes = 100;
  compilation.contents.retainedState.push_back({});
  compilation.contents.retainedState.back().size = 7;
  compilation.payloads = {{"program", 1, 0}, {"special", 0, 3}};
  programPass(compilation);

  ASSERT_EQ(compilation.contents.programs.size(), 1u);
  const container::QpcProgram& program = compilation.contents.programs[0];
  EXPECT_EQ(program.name, "decoder");
  EXPECT_EQ(program.numCores, 4u);
  EXPECT_EQ(program.batchSize, 8u);
  EXPECT_EQ(program.flags, container::kProgramFlagFp16Constants);
  EXPECT_EQ(program.ioRegionSize, 20480u);
  EXPECT_EQ(program.doorbellAddress, kDoorbellAddress);
  EXPECT_EQ(program.bufferIndices, (std::vector<uint32_t>{0, 1}));
  // rows 4: x, y 4x4 floats, z, w, b 1x4 floats: 2 * 64 + 3 * 16 bytes of activations.
  EXPECT_EQ(program.totalRequiredMemory, 20480u + 100u + 176u + 7u);
  const auto* payload = reinterpret_cast<const char*>(program.payload.data());
  EXPECT_EQ(std::string(payload, program.payload.size()), "program");
  ASSERT_EQ(compilation.contents.specializationPayloads.size(), 1u);
  EXPECT_EQ(compilation.contents.specializationPayloads[0].combination, 3u);
  EXPECT_EQ(compilation.contents.specializationPayloads[0].payload.size(), 7u);
  EXPECT_EQ(compilation.contents.buffers.size(), 2u);
}

TEST(ProgramPass, StatsBatchSizeIsTheReportedBatch) {
  ExecOptions options;
  options.model = "net.json";
  options.batchSize = 8;
  options.statsBatchSize = 2;
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2));
  compilation.payloads = {{"program", 0, 0}};
  programPass(compilation);
  EXPECT_EQ(compilation.contents.programs[0].batchSize, 2u);
  EXPECT_EQ(compilation.contents.programs[0].flags, 0u);
}

}  // namespace
}  // namespace qaic::compiler
