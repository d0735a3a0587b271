// SPDX-License-Identifier: Apache-2.0
// qaic-exec as users run it: real processes, real files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "ContainerFiles.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "TestModels.hpp"

namespace qaic::testing {
namespace {

using container::testing::stageModel;

class QaicExec : public ::testing::Test {
 protected:
  std::string out() const { return (dir_.path() / "out").string(); }
  std::string container() const { return out() + "/programqpc.bin"; }
  RunResult compile(const std::string& model, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"-m=" + model, "-aic-binary-dir=" + out()};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTool("qaic-exec", args);
  }
  void expectBadInput(const RunResult& r, const std::string& needle) {
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_EQ(r.err.rfind("qaic-exec: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  std::vector<char> readContainer() const {
    std::ifstream in(container(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  TempDir dir_{"qaic-exec"};
};

TEST_F(QaicExec, HelpExplainsEveryOption) {
  const auto r = runTool("qaic-exec", {"--help"});
  EXPECT_EQ(r.exitCode, 0);
  for (const char* option : {"-m=", "-aic-binary-dir=", "-aic-num-cores=", "-batchsize=", "-convert-to-fp16",
                             "-fp16-io-layout=", "-aic-hw", "-compile-only", "-onnx-define-symbol=", "--help"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(runTool("qaic-exec", {"-h"}).exitCode, 0);
}

TEST_F(QaicExec, CompilesTheTinyNetworkAndPrintsASummary) {
  const auto r = compile(stageModel("tiny", dir_.path()), {"-aic-num-cores=2", "-aic-hw", "-compile-only"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("2 buffers (1 in, 1 out), 1 constants (16 bytes)"), std::string::npos) << r.out;
  const auto image = container::QpcImage::open(container());
  EXPECT_EQ(image->programs()[0].numCores, 2u);
  EXPECT_NE(r.out.find(std::to_string(image->bytes().size()) + " bytes"), std::string::npos) << r.out;
  // Nothing but the container is written.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(out())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(QaicExec, BatchSizeRewritesIoDimsAndReinfers) {
  const auto r = compile(stageModel("batchable", dir_.path()), {"-batchsize=3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto image = container::QpcImage::open(container());
  EXPECT_EQ(image->buffers()[0].io.dims, (ir::Dims{3, 3, 8, 8}));
  EXPECT_EQ(image->buffers()[1].io.dims, (ir::Dims{3, 3, 8, 8}));
  EXPECT_EQ(image->allowedShapes()[0][0], (ir::Dims{3, 3, 4, 8}));
  EXPECT_EQ(image->programs()[0].batchSize, 3u);
  EXPECT_NE(container::QpcImage::payloadText(image->programs()[0]).find("[3,3,8,8]"), std::string::npos);
}

TEST_F(QaicExec, HostOnlyOpsAreRejected) {
  const auto r = compile(stageModel("has_print", dir_.path()));
  expectBadInput(r, "op 'show'");
  EXPECT_NE(r.err.find("host-only"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(container()));
}

TEST_F(QaicExec, NetworkWithoutIoSectionIsRejected) {
  const auto r = compile(stageModel("no_io", dir_.path()));
  expectBadInput(r, "\"io\" section");
  EXPECT_FALSE(std::filesystem::exists(container()));
}

TEST_F(QaicExec, ShapeErrorsNameTheOp) {
  const auto r = compile(stageModel("bad_shape", dir_.path()));
  expectBadInput(r, "cut");
  EXPECT_FALSE(std::filesystem::exists(container()));
}

TEST_F(QaicExec, MissingWeightsFileIsRejected) {
  const std::string model = stageModel("tiny", dir_.path());
  std::filesystem::remove(dir_.path() / "tiny.weights");
  const auto r = compile(model);
  expectBadInput(r, "tiny.weights");
  EXPECT_FALSE(std::filesystem::exists(container()));
}

TEST_F(QaicExec, FailedCompileLeavesThePreviousContainerIntact) {
  ASSERT_EQ(compile(stageModel("tiny", dir_.path())).exitCode, 0);
  const auto before = readContainer();
  expectBadInput(compile(stageModel("has_print", dir_.path())), "print");
  EXPECT_EQ(readContainer(), before);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(out())) ++files;
  EXPECT_EQ(files, 1u);
}

// The vendor's partition config: a bad one fails before anything is written, naming the field;
// a good one (or -mdp-pipeline-stages' own) is what -mdp-dump-partition-config writes.
TEST_F(QaicExec, PartitionConfigIsCheckedAndDumped) {
  const std::string model = stageModel("tiny", dir_.path());
  const std::string config = (dir_.path() / "mdp_ts_2.json").string();
  const std::string dumped = (dir_.path() / "dumped.json").string();
  std::ofstream(config) << R"({"connections": [{"devices": [0, 1], "type": "p2p"}],
    "partitions": [{"name": "Partition0",
                    "devices": [{"deviceId": 0, "numCores": 16}, {"deviceId": 1, "numCores": 17}]}]})";
  expectBadInput(compile(model, {"-mdp-load-partition-config=" + config, "-mdp-dump-partition-config=" + dumped}),
                 config + ": partitions[0].devices[1].numCores: 17 is more than a card's 16 NSPs");
  EXPECT_FALSE(std::filesystem::exists(container()));
  EXPECT_FALSE(std::filesystem::exists(dumped));

  std::ofstream(config, std::ios::trunc) << R"({"connections": [{"devices": [0, 1], "type": "p2p"}],
    "partitions": [{"name": "Partition0",
                    "devices": [{"deviceId": 0, "numCores": 16}, {"deviceId": 1, "numCores": 16}]}]})";
  auto r = compile(model, {"-mdp-load-partition-config=" + config, "-mdp-dump-partition-config=" + dumped});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("partition config of 2 devices (not split yet: the program runs on one device)"),
            std::string::npos)
      << r.out;
  std::ifstream in(dumped);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(text.find("\"connections\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"deviceId\": 1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"numCores\": 16"), std::string::npos) << text;
  // The dump reads back as a config; a third compile loads it and dumps the same text.
  const std::string again = (dir_.path() / "again.json").string();
  ASSERT_EQ(compile(model, {"-mdp-load-partition-config=" + dumped, "-mdp-dump-partition-config=" + again}).exitCode,
            0);
  std::ifstream againIn(again);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(againIn), {}), text);

  // -mdp-pipeline-stages=3 with 2 cores each: devices 0, 1, 2.
  r = compile(model, {"-aic-num-cores=2", "-mdp-pipeline-stages=3", "-mdp-dump-partition-config=" + dumped});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream stages(dumped);
  const std::string staged{std::istreambuf_iterator<char>(stages), {}};
  EXPECT_NE(staged.find("\"deviceId\": 2"), std::string::npos) << staged;
  EXPECT_EQ(staged.find("\"numCores\": 16"), std::string::npos) << staged;
  expectBadInput(compile(model, {"-mdp-load-partition-config=" + config, "-mdp-pipeline-stages=2"}),
                 "-mdp-pipeline-stages");
}

TEST_F(QaicExec, BadCommandLines) {
  expectBadInput(runTool("qaic-exec", {"-aic-binary-dir=" + out()}), "-m=");
  expectBadInput(runTool("qaic-exec", {"-m=x.json"}), "-aic-binary-dir");
  expectBadInput(runTool("qaic-exec", {"-m=x.json", "-aic-binary-dir=d", "-bogus"}), "-bogus");
  expectBadInput(runTool("qaic-exec", {"-m=x.json", "-aic-binary-dir=d", "-batchsize=zero"}), "-batchsize");
  expectBadInput(runTool("qaic-exec", {"-m=x.json", "-aic-binary-dir=d", "-aic-num-cores=0"}), "-aic-num-cores");
  expectBadInput(runTool("qaic-exec", {"-m=x.json", "-aic-binary-dir=d", "-onnx-define-symbol=N"}),
                 "-onnx-define-symbol");
  expectBadInput(runTool("qaic-exec", {"-m=x.json", "-aic-binary-dir=d", "-fp16-io-layout=NCHW"}), "-fp16-io-layout");
}

TEST_F(QaicExec, MissingModelFilesAreNamed) {
  expectBadInput(compile((dir_.path() / "absent.json").string()), "absent.json");
  expectBadInput(compile((dir_.path() / "absent.onnx").string()), "absent.onnx");
  EXPECT_FALSE(std::filesystem::exists(container()));
}

}  // namespace
}  // namespace qaic::testing
