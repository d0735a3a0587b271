// SPDX-License-Identifier: Apache-2.0
// qaic-exec as users run it: real processes, real files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "ContainerFiles.hpp"
#include "MultiDeviceProgram.hpp"
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
  // tiny's one 16-byte bias is too small a network to divide: both parts hold it whole.
  EXPECT_NE(r.out.find("split over 2 devices by tensor slicing (0 weights divided; weight bytes by device: 0=16 "
                       "1=16; nothing could be divided"),
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

  // -mdp-pipeline-stages=1 with 2 cores: device 0 with 2 NSPs; more stages than the network has
  // ops are refused.
  r = compile(model, {"-aic-num-cores=2", "-mdp-pipeline-stages=1", "-mdp-dump-partition-config=" + dumped});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream stages(dumped);
  const std::string staged{std::istreambuf_iterator<char>(stages), {}};
  EXPECT_NE(staged.find("\"numCores\": 2"), std::string::npos) << staged;
  EXPECT_EQ(staged.find("\"deviceId\": 1"), std::string::npos) << staged;
  expectBadInput(compile(model, {"-mdp-pipeline-stages=3"}),
                 "a pipeline of 3 stages: the network has 2 ops (constants aside), fewer than its stages");
  // Two stages: elew on device 0, relu on device 1; the dump names each stage's node.
  r = compile(model, {"-mdp-pipeline-stages=2", "-mdp-dump-partition-config=" + dumped});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("2 pipeline stages"), std::string::npos) << r.out;
  std::ifstream pipeline(dumped);
  const std::string piped{std::istreambuf_iterator<char>(pipeline), {}};
  EXPECT_NE(piped.find("\"nodeList\""), std::string::npos) << piped;
  EXPECT_NE(piped.find("\"Partition1\""), std::string::npos) << piped;
  expectBadInput(compile(model, {"-mdp-load-partition-config=" + config, "-mdp-pipeline-stages=2"}),
                 "-mdp-pipeline-stages");
}

// -allow-mxint8-mdp-io is a flag (efficient-transformers passes it bare); on one device it
// changes nothing, and --help says what it does.
TEST_F(QaicExec, AllowMxint8MdpIoIsAFlag) {
  const std::string model = stageModel("tiny", dir_.path());
  expectBadInput(compile(model, {"-allow-mxint8-mdp-io=true"}), "option -allow-mxint8-mdp-io takes no value");
  ASSERT_EQ(compile(model).exitCode, 0);
  const auto plain = readContainer();
  ASSERT_EQ(compile(model, {"-allow-mxint8-mdp-io"}).exitCode, 0);
  EXPECT_EQ(readContainer(), plain);
  const auto help = runTool("qaic-exec", {"--help"});
  EXPECT_NE(help.out.find("-allow-mxint8-mdp-io"), std::string::npos) << help.out;
}

// x [4, 16] -> matmul up [16, 64] -> relu -> matmul down [64, 16] -> y, with its weights file:
// an MLP tensor slicing divides (up by columns, down by rows and a sum).
std::string stageMlp(const std::filesystem::path& dir) {
  std::vector<float> up(16 * 64), down(64 * 16);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = float(int(i % 7) - 3) / 8;
  for (std::size_t i = 0; i < down.size(); ++i) down[i] = float(int(i % 5) - 2) / 8;
  const ir::WeightTensor weights[] = {{"up", ir::DType::Float, {16, 64}, std::as_bytes(std::span(up))},
                                      {"down", ir::DType::Float, {64, 16}, std::as_bytes(std::span(down))}};
  ir::writeWeightsFile((dir / "mlp.weights").string(), weights);
  auto create = [](const std::string& name, int rows, int cols) {
    return R"({"name": ")" + name + R"(_w", "optype": "create", "tensors_in": [],
     "tensors_out": [{"arg_name": "dst", "name": ")" +
           name + R"("}],
     "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": [)" +
           std::to_string(rows) + ", " + std::to_string(cols) + R"(]},
                {"arg_name": "data", "value": [0]}, {"arg_name": "ran", "value": [0, 0]},
                {"arg_name": "from_file", "value": true}]})";
  };
  const std::string path = (dir / "mlp.json").string();
  std::ofstream(path) << R"({"weights": "mlp.weights",
  "io": [{"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [4, 16]},
         {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [4, 16]}],
  "ops": [)" + create("up", 16, 64) +
                             ", " + create("down", 64, 16) + R"(,
    {"name": "up_mm", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": "x"},
     {"arg_name": "src2", "name": "up"}], "tensors_out": [{"arg_name": "dst", "name": "h"}], "params": []},
    {"name": "act", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "h"}],
     "tensors_out": [{"arg_name": "dst", "name": "a"}], "params": []},
    {"name": "down_mm", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": "a"},
     {"arg_name": "src2", "name": "down"}], "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []}]})";
  return path;
}

// A partition config of N devices makes one container with a part per device, each on the
// config's device with its NSPs and its share of the weights; qaic-util --qpc shows the parts;
// -v prints the slicing report; a config of one device changes nothing.
TEST_F(QaicExec, PartitionConfigOfSeveralDevicesWritesOnePartPerDevice) {
  const std::string model = stageMlp(dir_.path());
  ASSERT_EQ(compile(model).exitCode, 0);
  const auto single = readContainer();
  const std::string one = (dir_.path() / "one.json").string();
  std::ofstream(one) << partitionConfigFor({5}, 1);
  ASSERT_EQ(compile(model, {"-mdp-load-partition-config=" + one}).exitCode, 0);
  EXPECT_EQ(readContainer(), single);

  constexpr uint64_t kWeightBytes = 2 * 16 * 64 * sizeof(float);
  for (const std::vector<uint32_t>& slots : {std::vector<uint32_t>{2, 0}, std::vector<uint32_t>{1, 3, 0, 2}}) {
    const std::size_t parts = slots.size();
    SCOPED_TRACE(parts);
    const std::string config = (dir_.path() / "mdp.json").string();
    std::ofstream(config, std::ios::trunc) << partitionConfigFor(slots, 4);
    const auto r = compile(model, {"-mdp-load-partition-config=" + config, "-v"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const std::string share = std::to_string(kWeightBytes / parts);
    EXPECT_NE(r.out.find("split over " + std::to_string(parts) +
                         " devices by tensor slicing (2 weights divided; "
                         "weight bytes by device: " +
                         std::to_string(slots[0]) + "=" + share),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("tensor slicing:\nsplit: matmul 'up_mm'"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("all_reduce_sum"), std::string::npos) << r.out;

    const auto image = container::QpcImage::open(container());
    const auto& contents = image->contents();
    ASSERT_EQ(contents.deviceParts.size(), parts);
    for (std::size_t p = 0; p < parts; ++p) {
      const auto& part = contents.deviceParts[p];
      EXPECT_EQ(part.slot, slots[p]);
      EXPECT_EQ(part.numCores, 4u);
      EXPECT_EQ(part.weightBytes, kWeightBytes / parts);
      EXPECT_GT(part.sentBytes, 0u);
      const auto& inner = p == 0 ? contents : *part.contents;
      EXPECT_EQ(inner.programs[0].numCores, 4u);
      ASSERT_EQ(inner.buffers.size(), 2u);  // x in, y (summed, whole) out on every part
      EXPECT_EQ(inner.buffers[1].io.dims, (ir::Dims{4, 16}));
    }
    const auto util = runTool("qaic-util", {"--qpc", out()});
    ASSERT_EQ(util.exitCode, 0) << util.err;
    EXPECT_NE(util.out.find("\tDevices:" + std::to_string(parts) + "\n"), std::string::npos) << util.out;
    for (std::size_t p = 0; p < parts; ++p) {
      const auto at = util.out.find("\nDevice Part " + std::to_string(p) + "\n");
      ASSERT_NE(at, std::string::npos) << util.out;
      const std::string block = util.out.substr(at, util.out.find("\nDevice Part", at + 1) - at);
      EXPECT_NE(block.find("\tDevice:" + std::to_string(slots[p]) + "\n"), std::string::npos) << block;
      EXPECT_NE(block.find("\tNSPs:4\n"), std::string::npos) << block;
      EXPECT_NE(block.find("\tWeights Bytes:" + share + "\n"), std::string::npos) << block;
    }
  }
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
