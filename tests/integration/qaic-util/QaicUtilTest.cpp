// SPDX-License-Identifier: Apache-2.0
// qaic-util --qpc as users run it.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileProgram.hpp"
#include "MultiDeviceProgram.hpp"
#include "Process.hpp"
#include "ReluProgram.hpp"
#include "TempDir.hpp"
#include "TestModels.hpp"

namespace qaic::testing {
namespace {

using container::testing::stageModel;

class QaicUtilQpc : public ::testing::Test {
 protected:
  std::string out() const { return (dir_.path() / "out").string(); }
  void compile(const std::string& name, std::vector<std::string> extra = {}) {
    const auto r = runCompiler(stageModel(name, dir_.path()), out(), extra);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  static void expectLines(const std::string& text, const std::vector<std::string>& lines) {
    for (const auto& line : lines) EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << line << "\n" << text;
  }

  TempDir dir_{"qaic-util"};
};

TEST_F(QaicUtilQpc, PrintsProgramsBuffersShapesAndConstants) {
  compile("tiny", {"-aic-num-cores=3"});
  const auto r = runTool("qaic-util", {"--qpc", out()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.rfind("QPC " + out() + "/programqpc.bin\n", 0), 0u) << r.out;
  expectLines(r.out, {"Program 0", "\tName:tiny", "\tProgram Index:0", "\tNum Cores:3", "\tBatch Size:1",
                      "\tNum Semaphores:1", "\tNum MC IDs:0", "\tIO Region Size:20480", "\tDoorbell Address:8192",
                      "\tDone Semaphore:0", "\tRequest Descriptor Offset:0", "\tResponse Descriptor Offset:4096",
                      "\tFP16 Constants:no", "\tBuffer Mappings:0,1"});
  expectLines(r.out, {"Buffer 0", "\tName:input", "\tIndex:0", "\tDirection:input", "\tType:BUFFER_DATA_TYPE_FLOAT",
                      "\tUser Type:TL_FLOAT", "\tDims:[1,4]", "\tSize:16", "\tPartial:no", "\tSkip Partial Header:no",
                      "\tAllow Skip:no", "\tDevice Format:flat TL_FLOAT", "\tDevice Offset:12288", "\tDevice Size:4096",
                      "Buffer 1", "\tName:output", "\tDirection:output"});
  expectLines(r.out, {"Allowed Shapes", "\t0 (default): input[1,4] output[1,4]"});
  expectLines(r.out, {"Constant 0", "\tName:b", "\tIndex:0", "\tSize:16", "\tType:TL_FLOAT", "\tDims:[1,4]",
                      "\tEncoding:plain"});
  // A single-device program shows no device parts.
  EXPECT_EQ(r.out.find("Device Part"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\tDevices:"), std::string::npos) << r.out;
}

TEST_F(QaicUtilQpc, ShowsEachDevicesPartOfAMultiDeviceProgram) {
  std::filesystem::create_directories(out());
  const auto bytes = multiDeviceReluProgram({3, 1}, 2);
  std::ofstream(out() + "/programqpc.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const auto r = runTool("qaic-util", {"--qpc", out()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // Part 0 is the container itself: its program and buffers are shown as for any container.
  expectLines(r.out, {"\tFormat Version:4", "\tDevices:2", "\tConnection:p2p", "Program 0", "\tName:relu",
                      "\tNum Cores:2", "Buffer 0", "\tName:x"});
  const std::string nestedBytes = std::to_string(reluProgram(2).size()) + " bytes";
  for (std::size_t part : {0u, 1u}) {
    SCOPED_TRACE(part);
    const auto at = r.out.find("\nDevice Part " + std::to_string(part) + "\n");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string block = r.out.substr(at, r.out.find("\nDevice Part", at + 1) - at) + "\n";
    expectLines(block, {"\tDevice:" + std::string(part == 0 ? "3" : "1"), "\tNSPs:2",
                        "\tWeights Bytes:" + std::to_string(partWeightBytes(part)),
                        "\tRetained Bytes:" + std::to_string(partRetainedBytes(part)),
                        "\tSent Between Cards Per Inference:" + std::to_string(partSentBytes(part)),
                        "\tReceived Between Cards Per Inference:" + std::to_string(partReceivedBytes(part)),
                        "\tImage:" + (part == 0 ? std::string("this container") : nestedBytes)});
  }
  EXPECT_EQ(r.out.find("Device Part 2"), std::string::npos) << r.out;
}

TEST_F(QaicUtilQpc, ShowsFlagsDeviceFormatAndSpecializations) {
  compile("batchable", {"-batchsize=2", "-convert-to-fp16"});
  const auto r = runTool("qaic-util", {"--qpc=" + out()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectLines(r.out, {"\tName:frames", "\tDims:[2,3,8,8]", "\tPartial:yes", "\tSkip Partial Header:yes",
                      "\tAllow Skip:yes", "\tDevice Format:DWHC TL_FLOAT16", "\tFP16 Constants:yes",
                      "\t0 (default): frames[2,3,8,8] activated[2,3,8,8]", "\t1: frames[2,3,4,8] activated[2,3,4,8]"});
}

TEST_F(QaicUtilQpc, BadContainerExitsTwoWithTheLoadersMessage) {
  std::filesystem::create_directories(out());
  std::ofstream(out() + "/programqpc.bin") << "this is not a program container at all, not even close";
  const auto r = runTool("qaic-util", {"--qpc", out()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("programqpc.bin: header.magic: not a program container"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(QaicUtilQpc, MissingContainerAndBadUsage) {
  const auto missing = runTool("qaic-util", {"--qpc", out()});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("programqpc.bin"), std::string::npos) << missing.err;
  EXPECT_EQ(runTool("qaic-util", {"--qpc"}).exitCode, 2);
  EXPECT_EQ(runTool("qaic-util", {}).exitCode, 2);
  EXPECT_EQ(runTool("qaic-util", {"--bogus"}).exitCode, 2);
  const auto help = runTool("qaic-util", {"--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--qpc"), std::string::npos);
}

}  // namespace
}  // namespace qaic::testing
