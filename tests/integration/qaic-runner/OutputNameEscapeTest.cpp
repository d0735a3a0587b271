// SPDX-License-Identifier: Apache-2.0
// Security: a program container is user-supplied data, and qaic-runner --write-output-dir DIR
// names its files after the container's output buffers. A buffer named like a path ("../x",
// "/abs", "a/../../b", NUL or newline inside) must not make it write outside DIR. The containers
// are the seed-000 "regular" network compiled by qaic-exec, with its output buffer renamed in the
// IO descriptor and in the program's IR (tests/support ContainerEdits), and run on a real
// qaic-emu.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "ContainerEdits.hpp"
#include "EmulatorProcess.hpp"
#include "Process.hpp"
#include "RunnerSuite.hpp"

namespace fs = std::filesystem;
using qaic::testing::RunResult;
using qaic::testing::runTool;
using ::testing::HasSubstr;

namespace {

// Every path under `root`, relative to it (directories included).
std::set<std::string> tree(const fs::path& root) {
  std::set<std::string> paths;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    paths.insert(fs::relative(entry.path(), root).string());
  return paths;
}

class OutputNameEscapeTest : public RunnerSuite {
 protected:
  static void SetUpTestSuite() { startSuite("qaic-runner-escape", {"regular"}); }
  static void TearDownTestSuite() { stopSuite(); }

  // A sandbox per test: sandbox/program (the container), sandbox/a/b/out (DIR, two levels down
  // so that "../" and "../../" still land inside the sandbox where they can be seen).
  void SetUp() override {
    sandbox_ = suiteDir() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    outDir_ = sandbox_ / "a" / "b" / "out";
    fs::create_directories(outDir_);
    fs::create_directories(sandbox_ / "program");
  }

  // The compiled network with output buffer "out" renamed to `name`.
  void writeRenamedContainer(const std::string& name) {
    qaic::testing::writeWithBufferRenamed(suiteDir() / "regular" / "programqpc.bin",
                                          sandbox_ / "program" / "programqpc.bin", "out", name);
  }

  RunResult runWritingOutputs() {
    return runTool("qaic-runner",
                   {"-t", (sandbox_ / "program").string(), "-n", "1", "--write-output-dir", outDir_.string()},
                   std::chrono::seconds(120));
  }

  // Nothing but DIR's own contents may have appeared in the sandbox.
  void expectOnlyDirChanged(const std::set<std::string>& before) {
    for (const auto& path : tree(sandbox_)) {
      if (before.count(path)) continue;
      EXPECT_EQ(path.rfind("a/b/out/", 0), 0u) << "written outside the output directory: " << path;
    }
  }

  fs::path sandbox_;
  fs::path outDir_;
};

// The unmodified network writes its one output into DIR: the baseline that makes the refusals
// below meaningful (the same run, only the name differs).
TEST_F(OutputNameEscapeTest, PlainNameIsWrittenInsideTheDirectory) {
  writeRenamedContainer("result");
  const auto before = tree(sandbox_);
  RunResult r = runWritingOutputs();
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(outDir_ / "result-inf-0.bin"));
  EXPECT_EQ(fs::file_size(outDir_ / "result-inf-0.bin"), 4 * sizeof(int32_t));
  expectOnlyDirChanged(before);
}

TEST_F(OutputNameEscapeTest, PathLikeNamesAreRefusedBeforeAnythingIsWritten) {
  const std::string absolute = "/tmp/qaic-escape-" + std::to_string(::getpid());
  const std::vector<std::string> names = {"../x",  "../../x", "../../../x", absolute, "a/../../b",
                                          "sub/x", "..",      ".",          ".hidden"};
  for (const auto& name : names) {
    SCOPED_TRACE("buffer name '" + name + "'");
    writeRenamedContainer(name);
    const auto before = tree(sandbox_);
    RunResult r = runWritingOutputs();
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("cannot be a file name"));
    EXPECT_THAT(r.err, HasSubstr("output buffer name"));
    expectOnlyDirChanged(before);
    EXPECT_TRUE(fs::is_empty(outDir_)) << "a refused run wrote a file";
    EXPECT_FALSE(fs::exists(absolute + "-inf-0.bin"));
  }
}

// The container format has no room for a NUL in a name (C string APIs would cut "a\0/../../y" to
// "a" or walk into the rest): the writer refuses it, and a container patched to hold one anyway
// (CRC repaired) is refused by the runner as a bad container before anything is written.
TEST_F(OutputNameEscapeTest, NulInANameIsRefusedAsABadContainer) {
  EXPECT_THROW(writeRenamedContainer(std::string("a\0/../../y", 10)), qaic::testing::ContainerRefused);

  const std::string marked = "a\x7f/../../y";
  writeRenamedContainer(marked);
  const fs::path file = sandbox_ / "program" / "programqpc.bin";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::size_t patched = 0;
  for (auto at = bytes.find(marked); at != std::string::npos; at = bytes.find(marked, at + 1), ++patched)
    bytes[at + 1] = '\0';
  ASSERT_GT(patched, 0u);
  qaic::testing::repairChecksum(bytes);
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  const auto before = tree(sandbox_);
  RunResult r = runWritingOutputs();
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("contains a NUL byte"));
  expectOnlyDirChanged(before);
  EXPECT_TRUE(fs::is_empty(outDir_));
  EXPECT_FALSE(fs::exists(sandbox_ / "a" / "y-inf-0.bin"));
}

// A newline is legal in a file name and harmless to the directory: the file lands inside DIR.
TEST_F(OutputNameEscapeTest, NewlineInANameStaysInsideTheDirectory) {
  writeRenamedContainer("out\nput");
  const auto before = tree(sandbox_);
  RunResult r = runWritingOutputs();
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(outDir_ / "out\nput-inf-0.bin"));
  expectOnlyDirChanged(before);
}

// The out entries of a batch JSON name files to compare against (-c), never files to write:
// one that points outside DIR, or at an existing file, is not created or changed.
TEST_F(OutputNameEscapeTest, BatchJsonOutputPathsAreNeverWritten) {
  writeRenamedContainer("out");
  std::vector<int32_t> in0 = {1, 2, 3, 4};
  std::vector<float> in1 = {1, 2, 3, 4};
  std::ofstream(sandbox_ / "in0.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(in0.data()), sizeof(int32_t) * in0.size());
  std::ofstream(sandbox_ / "in1.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(in1.data()), sizeof(float) * in1.size());
  std::ofstream(sandbox_ / "victim.raw") << "keep me";
  const fs::path batch = sandbox_ / "a" / "batch.json";
  std::ofstream(batch) << R"({"IO-files": [[
    {"path": "../in0.raw", "io-direction": "in", "map-to": "in0", "data-type": "int"},
    {"path": "../in1.raw", "io-direction": "in", "map-to": "in1", "data-type": "float"},
    {"path": "../escaped.raw", "io-direction": "out", "map-to": "out", "data-type": "int"}],
   [{"path": "../in0.raw", "io-direction": "in", "map-to": "in0", "data-type": "int"},
    {"path": "../in1.raw", "io-direction": "in", "map-to": "in1", "data-type": "float"},
    {"path": "../victim.raw", "io-direction": "out", "map-to": "out", "data-type": "int"}]]})";
  const auto before = tree(sandbox_);
  RunResult r = runTool("qaic-runner",
                        {"-t", (sandbox_ / "program").string(), "-n", "2", "--aic-batch-json-input", batch.string(),
                         "--write-output-dir", outDir_.string(), "--write-output-num-samples", "2"},
                        std::chrono::seconds(120));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(fs::exists(sandbox_ / "escaped.raw"));
  std::ifstream victim(sandbox_ / "victim.raw");
  std::string text((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");
  EXPECT_TRUE(fs::exists(outDir_ / "out-inf-0.bin"));
  EXPECT_TRUE(fs::exists(outDir_ / "out-inf-1.bin"));
  expectOnlyDirChanged(before);
}

}  // namespace
