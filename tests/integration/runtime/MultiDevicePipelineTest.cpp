// SPDX-License-Identifier: Apache-2.0
// Pipelined multi-device programs through the runtime (docs/runtime.md, "Multi-device
// programs"): a four-layer MLP compiled by the real qaic-exec once for one device and with
// -mdp-pipeline-stages=2 and 4 (and a partition config naming each stage's nodes) runs on the
// real qaic-emu through the C++ API and qaic-runner with the single-device outputs; the cards'
// p2p counters move from each stage to the next; several inferences in flight on two
// activations all complete with their own outputs; a card hung and reset under one stage fails
// the inference naming that card.
#include <gmock/gmock.h>

#include <cmath>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "DeviceAttributes.hpp"
#include "IrGraphs.hpp"
#include "Process.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

using ::testing::HasSubstr;

constexpr int kRows = 4, kWidth = 16, kHidden = 32, kLayers = 4;

// x [4, 16] -> four matmuls (16x32, 32x16, 16x32, 32x16), a relu after each -> y, and `mid`, the
// second layer's output, as a second output: a tensor of an early stage the last one returns.
std::filesystem::path writeDeepMlp(const std::filesystem::path& dir) {
  std::vector<std::vector<float>> data(kLayers);
  std::vector<ir::WeightTensor> weights;
  std::string ops;
  std::string input = "x";
  for (int l = 0; l < kLayers; ++l) {
    const int rows = l % 2 == 0 ? kWidth : kHidden, cols = l % 2 == 0 ? kHidden : kWidth;
    data[l].resize(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < data[l].size(); ++i)
      data[l][i] = static_cast<float>(static_cast<int>((i * (l + 3)) % 11) - 5) / 16;
    const std::string w = "w" + std::to_string(l), h = "h" + std::to_string(l);
    const std::string out = l == 1 ? "mid" : l == kLayers - 1 ? "y" : "a" + std::to_string(l);
    weights.push_back({w, ir::DType::Float, {rows, cols}, std::as_bytes(std::span(data[l]))});
    ops += (l ? ", " : "") + std::string(R"({"name": ")") + w + R"(_w", "optype": "create", "tensors_in": [],
      "tensors_out": [{"arg_name": "dst", "name": ")" +
           w + R"("}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"},
      {"arg_name": "dims", "value": [)" +
           std::to_string(rows) + ", " + std::to_string(cols) + R"(]},
      {"arg_name": "data", "value": [0]}, {"arg_name": "ran", "value": [0, 0]}, {"arg_name": "from_file", "value": true}]},
      {"name": "mm)" +
           std::to_string(l) + R"(", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": ")" + input +
           R"("}, {"arg_name": "src2", "name": ")" + w + R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + h +
           R"("}], "params": []},
      {"name": "act)" +
           std::to_string(l) + R"(", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": ")" + h +
           R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + out + R"("}], "params": []})";
    input = out;
  }
  ir::writeWeightsFile((dir / "deep.weights").string(), weights);
  const auto path = dir / "deep.json";
  std::ofstream(path) << R"({"weights": "deep.weights", "io": [
    {"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [4, 16]},
    {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [4, 16]},
    {"name": "mid", "tensor": "mid", "direction": "out", "dtype": "TL_FLOAT", "dims": [4, 16]}],
    "ops": [)" + ops + "]}";
  return path;
}

std::vector<float> deepInput(int round) {
  std::vector<float> x(kRows * kWidth);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>((i * 5 + round) % 13) - 6) / 4;
  return x;
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6f + 1e-5f * std::fabs(want[i])) << "element " << i;
}

struct Outputs {
  std::vector<float> y, mid;
};

class MultiDevicePipelineTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 4}, {"nsps": 2, "dbcs": 4}, {"nsps": 2, "dbcs": 4},
               {"nsps": 2, "dbcs": 4}]})";
  }
  void SetUp() override {
    RuntimeTest::SetUp();
    if (HasFatalFailure()) return;
    ir_ = writeDeepMlp(work());
    single_ = compileFile("deep1", ir_);
    for (int stages : {2, 4})
      staged_[stages] = compileFile(
          "deep" + std::to_string(stages), ir_,
          {"-mdp-pipeline-stages=" + std::to_string(stages),
           "-mdp-dump-partition-config=" + (work() / ("dump" + std::to_string(stages) + ".json")).string()});
    context_ = makeContext();
  }

  Outputs run(InferenceSet& set, const std::vector<float>& x) {
    std::vector<float> in = x;
    Outputs out{std::vector<float>(kRows * kWidth, -1000.0f), std::vector<float>(kRows * kWidth, -1000.0f)};
    inferOnce(set, {heapBuffer(in), heapBuffer(out.y), heapBuffer(out.mid)}, 1);
    return out;
  }
  Outputs reference(int round) {
    auto one = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
    return run(*one, deepInput(round));
  }
  uint64_t counter(unsigned device, const char* name) const { return std::stoull(emu_->attribute(device, name)); }
  void expectAllFree() const {
    for (unsigned d = 0; d < 4; ++d) EXPECT_EQ(counter(d, driver::sysfs::kEmuNspFree), 2u) << "device " << d;
  }

  std::filesystem::path ir_;
  Network single_;
  std::map<int, Network> staged_;
};

TEST_F(MultiDevicePipelineTest, StagesOverTwoAndFourCardsGiveTheSingleDeviceOutputs) {
  std::vector<Outputs> want;
  for (int round = 0; round < 3; ++round) want.push_back(reference(round));
  expectClose(want[0].y, expected(single_, {deepInput(0)})[0]);

  for (int stages : {2, 4}) {
    SCOPED_TRACE(std::to_string(stages) + " stages");
    ASSERT_EQ(staged_[stages].qpc->getInfo().numDevices, static_cast<uint32_t>(stages));
    std::vector<uint64_t> sent, received;
    for (int d = 0; d < 4; ++d) {
      sent.push_back(counter(d, driver::sysfs::kEmuP2pTxBytes));
      received.push_back(counter(d, driver::sysfs::kEmuP2pRxBytes));
    }
    // Stage s on device s: the k-th named device runs the config's k-th device.
    InferenceSetProperties properties;
    for (int d = 0; d < stages; ++d) properties.programProperties.devMapping.push_back(static_cast<QID>(d));
    auto set = InferenceSet::Factory(context_, staged_[stages].qpc, 0, 2, 1, &properties);
    for (int round = 0; round < 3; ++round) {
      const Outputs got = run(*set, deepInput(round));
      expectClose(got.y, want[round].y);
      expectClose(got.mid, want[round].mid);
    }
    // Every stage but the last sends, every stage but the first receives; nothing else moves.
    for (int d = 0; d < 4; ++d) {
      const uint64_t tx = counter(d, driver::sysfs::kEmuP2pTxBytes) - sent[d];
      const uint64_t rx = counter(d, driver::sysfs::kEmuP2pRxBytes) - received[d];
      EXPECT_EQ(tx > 0, d < stages - 1) << "device " << d << " sent " << tx;
      EXPECT_EQ(rx > 0, d > 0 && d < stages) << "device " << d << " received " << rx;
    }
    set.reset();
    expectAllFree();
  }
  // qaic-util --qpc shows each stage's part; the dumped config names each stage's nodes.
  const auto util = testing::runTool("qaic-util", {"--qpc", staged_[2].qpcDir.string()});
  ASSERT_EQ(util.exitCode, 0) << util.err;
  EXPECT_THAT(util.out, HasSubstr("Device Part 1")) << util.out;
  std::ifstream dumped(work() / "dump2.json");
  const std::string config((std::istreambuf_iterator<char>(dumped)), std::istreambuf_iterator<char>());
  EXPECT_THAT(config, HasSubstr("\"nodeList\"")) << config;
  EXPECT_THAT(config, HasSubstr("\"mm0\"")) << config;
}

// A config naming the nodes of each stage (the vendor's pipeline form): three layers on card 0,
// the last on card 1; the outputs do not change.
TEST_F(MultiDevicePipelineTest, NodeListsPlaceTheStages) {
  const Outputs want = reference(1);
  const auto config = work() / "lists.json";
  std::ofstream(config) << R"({"connections": [{"devices": [0, 1], "type": "p2p"}], "partitions": [
    {"name": "Partition0", "devices": [{"deviceId": 0, "numCores": 1}],
     "nodeList": ["mm0", "act0", "mm1", "act1", "mm2", "act2"]},
    {"name": "Partition1", "devices": [{"deviceId": 1, "numCores": 1}], "nodeList": ["mm3", "act3"]}]})";
  const Network listed = compileFile("listed", ir_, {"-mdp-load-partition-config=" + config.string()});
  auto set = InferenceSet::Factory(context_, listed.qpc, 0, 1, 1);
  const Outputs got = run(*set, deepInput(1));
  expectClose(got.y, want.y);
  expectClose(got.mid, want.mid);
}

// Two activations with two handles each, eight inferences submitted at once: each completes
// with its own outputs, so the stages hand each inference's tensors to the same inference.
TEST_F(MultiDevicePipelineTest, InferencesInFlightOnTwoActivationsKeepTheirOwnOutputs) {
  std::vector<Outputs> want;
  for (int round = 0; round < 8; ++round) want.push_back(reference(round));
  auto set = InferenceSet::Factory(context_, staged_[2].qpc, 0, 2, 2);
  std::vector<std::vector<float>> x(8);
  std::vector<Outputs> got(8, Outputs{std::vector<float>(kRows * kWidth), std::vector<float>(kRows * kWidth)});
  std::mutex mutex;
  std::condition_variable done;
  int completed = 0;
  auto notify = [&](const shInferenceHandle& h, void*) {
    EXPECT_EQ(h->getStatus(), QS_SUCCESS) << h->getErrorMessage();
    std::lock_guard lock(mutex);
    ++completed;
    done.notify_all();
  };
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<shInferenceHandle> handles;
    for (int i = batch * 4; i < batch * 4 + 4; ++i) {
      x[i] = deepInput(i);
      handles.push_back(acquireWith(*set, {heapBuffer(x[i]), heapBuffer(got[i].y), heapBuffer(got[i].mid)}));
    }
    for (auto& h : handles) set->submit(h, notify, nullptr);
    {
      std::unique_lock lock(mutex);
      ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(30), [&] { return completed == (batch + 1) * 4; }));
    }
    for (auto& h : handles) set->putCompleted(h);
  }
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE("inference " + std::to_string(i));
    expectClose(got[i].y, want[i].y);
    expectClose(got[i].mid, want[i].mid);
  }
  set.reset();
  expectAllFree();
}

// Stage 1's card hangs, then resets under the request: the inference fails naming that card,
// stage 0 does not hang on its full link, and every card gets its NSPs back.
TEST_F(MultiDevicePipelineTest, CardResetUnderAStageFailsTheInferenceNamingTheCard) {
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {0, 1};
  properties.programProperties.submitNumRetries = 0;
  auto set = InferenceSet::Factory(context_, staged_[2].qpc, 0, 1, 1, &properties);
  ASSERT_NO_THROW(run(*set, deepInput(0)));
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultNspHang, "1").ok());
  std::vector<float> x = deepInput(1), y(kRows * kWidth), mid(kRows * kWidth);
  auto h = acquireWith(*set, {heapBuffer(x), heapBuffer(y), heapBuffer(mid)});
  set->submit(h, 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultReset, "1").ok());
  const QStatus status = set->waitForCompletion(h, 20'000'000);
  EXPECT_NE(status, QS_SUCCESS);
  EXPECT_NE(status, QS_TIMEDOUT) << h->getErrorMessage();
  // Device 1 runs the last stage, which is part 0 of the container.
  EXPECT_THAT(h->getErrorMessage(), HasSubstr("device 1 (part 0 of 2)"));
  set->putCompleted(h);
  set.reset();
  for (int attempt = 0; attempt < 100 && emu_->attribute(1, driver::sysfs::kEmuStatus) != "Ready"; ++attempt)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  expectAllFree();
}

// qaic-runner with -d given twice runs the 2-stage program and writes the single-device outputs.
TEST_F(MultiDevicePipelineTest, QaicRunnerRunsThePipelinedProgram) {
  const Outputs want = reference(3);
  context_.reset();
  const auto input = work() / "x.raw";
  {
    const auto x = deepInput(3);
    std::ofstream(input, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  }
  const auto out = work() / "out";
  const auto r = testing::runTool("qaic-runner", {"-t", staged_[2].qpcDir.string(), "-n", "4", "-i", input.string(),
                                                  "--write-output-dir", out.string(), "-d", "2", "-d", "3"});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("InferenceCnt 4 ")) << r.out;
  std::vector<float> y(kRows * kWidth);
  std::ifstream(out / "y-inf-0.bin", std::ios::binary).read(reinterpret_cast<char*>(y.data()), y.size() * 4);
  expectClose(y, want.y);
  expectAllFree();
}

}  // namespace
}  // namespace qaic::rt::test
