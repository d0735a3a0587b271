// SPDX-License-Identifier: Apache-2.0
// qaic-runner's output files are all or nothing: a write that cannot finish leaves neither a
// truncated file under the final name nor its ".partial" beside it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "OutputWriter.hpp"
#include "TempDir.hpp"

namespace fs = std::filesystem;
using qaic::runner::OutputWriteError;
using qaic::runner::OutputWriter;

namespace {

std::vector<uint8_t> readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(OutputWriter, WritesTheBytesUnderTheFinalNameOnly) {
  qaic::testing::TempDir dir("runner-output");
  const std::vector<uint8_t> bytes{1, 2, 3, 250};
  const std::string path = OutputWriter(dir.path().string()).write("logits", 3, bytes);
  EXPECT_EQ(fs::path(path).filename(), "logits-inf-3.bin");
  EXPECT_EQ(readAll(path), bytes);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(OutputWriter, AFailedWriteNamesTheFileAndLeavesNothingBehind) {
  qaic::testing::TempDir dir("runner-output");
  // The final name is taken by a non-empty directory, so the rename into place fails.
  fs::create_directories(dir.path() / "logits-inf-0.bin" / "occupied");
  try {
    OutputWriter(dir.path().string()).write("logits", 0, std::vector<uint8_t>(64, 7));
    FAIL() << "the write into a name held by a directory succeeded";
  } catch (const OutputWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("logits-inf-0.bin"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(dir.path() / "logits-inf-0.bin" / "occupied"));
  EXPECT_FALSE(fs::exists(dir.path() / "logits-inf-0.bin.partial"));
}
