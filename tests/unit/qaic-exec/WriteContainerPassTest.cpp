// SPDX-License-Identifier: Apache-2.0
// write-container: programqpc.bin as the earlier passes described it, and the summary.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileError.hpp"
#include "ContainerFiles.hpp"
#include "PassTestModels.hpp"
#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

// Every pass before write-container over the two-path network, its weights in memory.
void describe(Compilation& compilation) {
  compilation.variants.push_back(testing::twoPathModel(2));
  for (const CompilePass& pass : compilePasses()) {
    if (pass.name == "load-specializations") continue;
    if (pass.name == "write-container") break;
    pass.run(compilation);
  }
}

TEST(WriteContainerPass, WritesTheContainerAndSummarizesIt) {
  qaic::testing::TempDir dir("qaic-write-container-pass");
  ExecOptions options;
  options.model = "net.json";
  options.binaryDir = (dir.path() / "out/qpc").string();
  Compilation compilation(options);
  describe(compilation);
  writeContainerPass(compilation);

  const CompileSummary& summary = compilation.summary;
  EXPECT_EQ(summary.outputPath, options.binaryDir + "/programqpc.bin");
  EXPECT_EQ(summary.inputs, 2u);
  EXPECT_EQ(summary.outputs, 2u);
  EXPECT_EQ(summary.constants, 1u);
  EXPECT_EQ(summary.constantBytes, 16u);
  EXPECT_EQ(summary.fileBytes, std::filesystem::file_size(summary.outputPath));
  const auto image = container::QpcImage::open(summary.outputPath);
  ASSERT_EQ(image->buffers().size(), 4u);
  EXPECT_EQ(image->buffers()[0].io.bufferName, "x");
  ASSERT_EQ(image->constants().size(), 1u);
  EXPECT_EQ(image->constants()[0].tensor.name, "b");
  EXPECT_EQ(image->programs()[0].name, "net");
  EXPECT_EQ(summary.ioRegionSize, image->programs()[0].ioRegionSize);
}

TEST(WriteContainerPass, AnOutputDirectoryThatCannotBeMadeIsNamed) {
  qaic::testing::TempDir dir("qaic-write-container-pass");
  std::ofstream(dir.path() / "file") << "not a directory";
  ExecOptions options;
  options.model = "net.json";
  options.binaryDir = (dir.path() / "file/qpc").string();
  Compilation compilation(options);
  describe(compilation);
  try {
    writeContainerPass(compilation);
    ADD_FAILURE() << "wrote under a file";
  } catch (const CompileError& e) {
    const std::string expected = ": cannot create the output directory: Not a directory";
    EXPECT_EQ(std::string(e.what()), options.binaryDir + expected);
  }
}

}  // namespace
}  // namespace qaic::compiler
