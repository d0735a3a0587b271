// SPDX-License-Identifier: Apache-2.0
// Multi-device programs through the runtime (docs/runtime.md, "Multi-device programs"): an MLP
// compiled by the real qaic-exec once for one device and once with partition configs of 2 and 4
// devices runs on the real qaic-emu through the C++ API and qaic-runner with the single-device
// outputs; the cards' p2p counters move, each card shows its part's NSPs while the set lives and
// gets them back after; a card reset mid-run fails the inference naming the card; the device
// choices the runtime refuses are refused before any card is touched.
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

constexpr int kRows = 4, kWidth = 16, kHidden = 64;

// x [4, 16] -> matmul [16, 64] -> relu -> matmul [64, 16] -> y, weights in a side file: the two
// matmuls tensor slicing divides (columns, then rows and a sum across the cards).
std::filesystem::path writeMlp(const std::filesystem::path& dir) {
  std::vector<float> up(kWidth * kHidden), down(kHidden * kWidth);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<float>(static_cast<int>(i % 11) - 5) / 16;
  for (std::size_t i = 0; i < down.size(); ++i) down[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 16;
  const ir::WeightTensor weights[] = {{"up", ir::DType::Float, {kWidth, kHidden}, std::as_bytes(std::span(up))},
                                      {"down", ir::DType::Float, {kHidden, kWidth}, std::as_bytes(std::span(down))}};
  ir::writeWeightsFile((dir / "mlp.weights").string(), weights);
  auto weight = [](const std::string& name, int rows, int cols) {
    return R"({"name": ")" + name + R"(_w", "optype": "create", "tensors_in": [],
      "tensors_out": [{"arg_name": "dst", "name": ")" +
           name + R"("}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"},
      {"arg_name": "dims", "value": [)" +
           std::to_string(rows) + ", " + std::to_string(cols) + R"(]}, {"arg_name": "data", "value": [0]},
      {"arg_name": "ran", "value": [0, 0]}, {"arg_name": "from_file", "value": true}]})";
  };
  auto matmul = [](const std::string& name, const std::string& a, const std::string& b, const std::string& out) {
    return R"({"name": ")" + name + R"(", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": ")" + a +
           R"("}, {"arg_name": "src2", "name": ")" + b + R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + out +
           R"("}], "params": []})";
  };
  const auto path = dir / "mlp.json";
  std::ofstream(path) << R"({"weights": "mlp.weights", "io": [
    {"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [4, 16]},
    {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [4, 16]}],
    "ops": [)" + weight("up", kWidth, kHidden) +
                             ", " + weight("down", kHidden, kWidth) + ", " + matmul("up_mm", "x", "up", "h") +
                             R"(, {"name": "act", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "h"}],
       "tensors_out": [{"arg_name": "dst", "name": "a"}], "params": []}, )" +
                             matmul("down_mm", "a", "down", "y") + "]}";
  return path;
}

// The vendor's partition config (docs/formats/partition-config.md): `devices` cards of one NSP.
std::string partitionConfig(int devices) {
  std::string ids, entries;
  for (int d = 0; d < devices; ++d) {
    ids += (d ? "," : "") + std::to_string(d);
    entries += std::string(d ? "," : "") + R"({"deviceId":)" + std::to_string(d) + R"(,"numCores":1})";
  }
  return R"({"connections":[{"devices":[)" + ids + R"(],"type":"p2p"}],"partitions":[{"name":"Partition0",)" +
         R"("devices":[)" + entries + "]}]}";
}

std::vector<float> mlpInput(int round) {
  std::vector<float> x(kRows * kWidth);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>((i * 3 + round) % 13) - 6) / 4;
  return x;
}

class MultiDeviceTest : public RuntimeTest {
 protected:
  // Four cards of 2 NSPs; p2pGroups_ "" puts them in one P2P group.
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 4}, {"nsps": 2, "dbcs": 4}, {"nsps": 2, "dbcs": 4},
               {"nsps": 2, "dbcs": 4}])" +
           (p2pGroups_.empty() ? std::string() : R"(, "p2p_groups": )" + p2pGroups_) + "}";
  }
  void SetUp() override {
    RuntimeTest::SetUp();
    if (HasFatalFailure()) return;
    const auto ir = writeMlp(work());
    single_ = compileFile("mlp1", ir);
    for (int parts : {2, 4}) {
      const auto config = work() / ("mdp" + std::to_string(parts) + ".json");
      std::ofstream(config) << partitionConfig(parts);
      split_[parts] = compileFile("mlp" + std::to_string(parts), ir, {"-mdp-load-partition-config=" + config.string()});
    }
    context_ = makeContext();
  }

  std::vector<float> run(InferenceSet& set, const std::vector<float>& x) {
    std::vector<float> in = x, y(kRows * kWidth, -1000.0f);
    inferOnce(set, {heapBuffer(in), heapBuffer(y)}, 1);
    return y;
  }
  uint64_t counter(unsigned device, const char* name) const { return std::stoull(emu_->attribute(device, name)); }
  uint64_t nspFree(unsigned device) const { return counter(device, driver::sysfs::kEmuNspFree); }
  // Every card has all its NSPs back (nothing leaked, nothing left active).
  void expectAllFree() const {
    for (unsigned d = 0; d < 4; ++d) EXPECT_EQ(nspFree(d), 2u) << "device " << d;
  }

  std::string p2pGroups_;
  Network single_;
  std::map<int, Network> split_;
};

void expectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6f + 1e-5f * std::fabs(want[i])) << "element " << i;
}

TEST_F(MultiDeviceTest, SplitOverTwoAndFourCardsGivesTheSingleDeviceOutputs) {
  EXPECT_EQ(single_.qpc->getInfo().numDevices, 1u);
  auto one = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
  std::vector<std::vector<float>> want;
  for (int round = 0; round < 3; ++round) want.push_back(run(*one, mlpInput(round)));
  one.reset();
  expectClose(want[0], expected(single_, {mlpInput(0)})[0]);

  for (int parts : {2, 4}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    ASSERT_EQ(split_[parts].qpc->getInfo().numDevices, static_cast<uint32_t>(parts));
    std::vector<uint64_t> sentBefore;
    for (int d = 0; d < parts; ++d) sentBefore.push_back(counter(d, driver::sysfs::kEmuP2pTxBytes));
    // Neither devMapping nor named devices: the first free cards of the one P2P group.
    auto set = InferenceSet::Factory(context_, split_[parts].qpc, 0, 2, 1);
    for (int d = 0; d < 4; ++d) EXPECT_EQ(nspFree(d), d < parts ? 1u : 2u) << "device " << d;
    const auto util = testing::runTool("qaic-util", {"-q"});
    ASSERT_EQ(util.exitCode, 0) << util.err;
    EXPECT_THAT(util.out, HasSubstr("Nsp Free:1")) << util.out;
    for (int round = 0; round < 3; ++round) expectClose(run(*set, mlpInput(round)), want[round]);
    uint64_t sent = 0;
    for (int d = 0; d < parts; ++d) {
      EXPECT_GT(counter(d, driver::sysfs::kEmuP2pTxBytes), sentBefore[d]) << "device " << d;
      sent += counter(d, driver::sysfs::kEmuP2pTxBytes) - sentBefore[d];
    }
    // One inference's own count of the bytes between its cards is what the cards counted for it.
    std::vector<float> x = mlpInput(0), y(kRows * kWidth);
    auto h = acquireWith(*set, {heapBuffer(x), heapBuffer(y)});
    set->submit(h, 9);
    ASSERT_EQ(set->waitForCompletion(h, 20'000'000), QS_SUCCESS) << h->getErrorMessage();
    EXPECT_EQ(h->getBetweenCardsBytes() * 3, sent);
    EXPECT_GT(h->getBetweenCardsBytes(), 0u);
    set->putCompleted(h);
    set.reset();
    expectAllFree();
  }
}

// devMapping names the cards (as efficient-transformers' "2:3"); the C++ callback path and two
// inferences in flight on one activation.
TEST_F(MultiDeviceTest, DevMappingPlacesThePartsAndCallbacksComplete) {
  auto one = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
  const auto want0 = run(*one, mlpInput(0)), want1 = run(*one, mlpInput(1));
  one.reset();
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {3, 2};
  auto set = InferenceSet::Factory(context_, split_[2].qpc, 3, 2, 1, &properties);
  EXPECT_EQ(nspFree(0), 2u);
  EXPECT_EQ(nspFree(2), 1u);
  EXPECT_EQ(nspFree(3), 1u);
  std::vector<float> x0 = mlpInput(0), x1 = mlpInput(1), y0(kRows * kWidth), y1(kRows * kWidth);
  std::mutex mutex;
  std::condition_variable done;
  int completed = 0;
  auto notify = [&](const shInferenceHandle& h, void*) {
    EXPECT_EQ(h->getStatus(), QS_SUCCESS) << h->getErrorMessage();
    std::lock_guard lock(mutex);
    ++completed;
    done.notify_all();
  };
  auto h0 = acquireWith(*set, {heapBuffer(x0), heapBuffer(y0)});
  auto h1 = acquireWith(*set, {heapBuffer(x1), heapBuffer(y1)});
  set->submit(h0, notify, nullptr);
  set->submit(h1, notify, nullptr);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(20), [&] { return completed == 2; }));
  }
  expectClose(y0, want0);
  expectClose(y1, want1);
  EXPECT_GT(h0->getTransferCounts().hostCopiedBytes + h0->getTransferCounts().inPlaceBytes, 0u);
  EXPECT_GT(h0->getBetweenCardsBytes(), 0u);
  set->putCompleted(h0);
  set->putCompleted(h1);
  set.reset();
  expectAllFree();
}

TEST_F(MultiDeviceTest, DeviceChoicesThatCannotHoldTheProgramAreRefusedBeforeAnyCardIsTouched) {
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {1};
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context_, split_[2].qpc, 1, 1, 1, &properties); }, QS_INVAL,
                      "needs 2 devices; devMapping names 1 (1)"));
  properties.programProperties.devMapping = {1, 1};
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context_, split_[2].qpc, 1, 1, 1, &properties); }, QS_INVAL,
                      "devMapping names device 1 twice"));
  properties.programProperties.devMapping = {0, 1, 2};
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context_, split_[4].qpc, 0, 1, 1, &properties); }, QS_INVAL,
                      "needs 4 devices; devMapping names 3 (0, 1 and 2)"));
  // A context the application opened on two cards has too few for four parts.
  auto two = Context::Factory(nullptr, {0, 1});
  EXPECT_TRUE(
      refused([&] { InferenceSet::Factory(two, split_[4].qpc, 0, 1, 1); }, QS_INVAL, "the Context names 2 (0 and 1)"));
  // Three activations of 1 NSP each do not fit cards of 2: no group has 4 free cards.
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context_, split_[4].qpc, 0, 1, 3); }, QS_NO_RESOURCES,
                      "no 4 devices of one P2P group"));
  expectAllFree();
}

class SplitTopologyTest : public MultiDeviceTest {
 protected:
  void SetUp() override {
    p2pGroups_ = "[[0, 1], [2, 3]]";
    MultiDeviceTest::SetUp();
  }
};

TEST_F(SplitTopologyTest, CardsOfDifferentGroupsAreRefusedAndTheFreeChoiceStaysInOneGroup) {
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {1, 2};
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context_, split_[2].qpc, 1, 1, 1, &properties); }, QS_INVAL,
                      "devices 1 and 2 are not linked peer to peer"));
  expectAllFree();
  // Card 1 busy: the free choice takes cards 2 and 3 (0 has no free peer), not 0 and 2.
  auto busy = InferenceSet::Factory(context_, single_.qpc, 1, 1, 2);
  auto set = InferenceSet::Factory(context_, split_[2].qpc, 0, 1, 1);
  EXPECT_EQ(nspFree(0), 2u);
  EXPECT_EQ(nspFree(2), 1u);
  EXPECT_EQ(nspFree(3), 1u);
  auto one = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
  expectClose(run(*set, mlpInput(2)), run(*one, mlpInput(2)));
}

// A card reset while a part's inference is in flight on it: the inference fails naming that
// card, the other part does not hang, and with the set gone every card has its NSPs back.
TEST_F(MultiDeviceTest, CardResetMidRunFailsTheInferenceNamingTheCard) {
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {0, 1};
  properties.programProperties.submitNumRetries = 0;
  auto set = InferenceSet::Factory(context_, split_[2].qpc, 0, 1, 1, &properties);
  ASSERT_NO_THROW(run(*set, mlpInput(0)));
  // Card 1's NSPs hang (which already breaks the group), then the card resets under the request.
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultNspHang, "1").ok());
  std::vector<float> x = mlpInput(1), y(kRows * kWidth);
  auto h = acquireWith(*set, {heapBuffer(x), heapBuffer(y)});
  set->submit(h, 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultReset, "1").ok());
  const QStatus status = set->waitForCompletion(h, 20'000'000);
  EXPECT_NE(status, QS_SUCCESS);
  EXPECT_NE(status, QS_TIMEDOUT) << h->getErrorMessage();
  EXPECT_THAT(h->getErrorMessage(), HasSubstr("device 1 (part 1 of 2)"));
  set->putCompleted(h);
  set.reset();
  for (int attempt = 0; attempt < 100 && emu_->attribute(1, driver::sysfs::kEmuStatus) != "Ready"; ++attempt)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  expectAllFree();
}

// A card removed while a part's inference waits on it: the inference ends QS_DEV_REMOVED naming
// the card, a single-device program on the other card keeps computing, and with the split set
// gone that card has every NSP but the other program's back.
TEST_F(MultiDeviceTest, ACardLostMidRunFailsTheInferenceAndSparesTheOtherPrograms) {
  auto other = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
  const auto before = run(*other, mlpInput(4));
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {0, 1};
  properties.programProperties.submitNumRetries = 0;
  auto set = InferenceSet::Factory(context_, split_[2].qpc, 0, 1, 1, &properties);
  expectClose(run(*set, mlpInput(4)), before);
  // Card 1's request stays in flight (its NSPs hang) until the card goes.
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultNspHang, "1").ok());
  std::vector<float> x = mlpInput(5), y(kRows * kWidth);
  auto h = acquireWith(*set, {heapBuffer(x), heapBuffer(y)});
  set->submit(h, 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(driver::SysfsDevice(emu_->root(), 1).write(driver::sysfs::kFaultRemove, "1").ok());
  const QStatus status = set->waitForCompletion(h, 20'000'000);
  EXPECT_EQ(status, QS_DEV_REMOVED) << statusName(status) << ": " << h->getErrorMessage();
  EXPECT_THAT(h->getErrorMessage(), HasSubstr("device 1 (part 1 of 2)"));
  set->putCompleted(h);
  set.reset();
  expectClose(run(*other, mlpInput(4)), before);
  EXPECT_EQ(nspFree(0), 1u);  // the other program's NSP only
  other.reset();
  EXPECT_EQ(nspFree(0), 2u);
}

// qaic-runner with -d given twice, with a list, or without -d (the runtime picks the cards) runs
// the 2-part program, prints its usual stats and writes the single-device outputs.
TEST_F(MultiDeviceTest, QaicRunnerRunsTheSplitProgram) {
  auto one = InferenceSet::Factory(context_, single_.qpc, 0, 1, 1);
  const auto want = run(*one, mlpInput(3));
  one.reset();
  context_.reset();
  const auto input = work() / "x.raw";
  {
    const auto x = mlpInput(3);
    std::ofstream(input, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  }
  int run = 0;
  for (const std::vector<std::string>& devices :
       {std::vector<std::string>{"-d", "2", "-d", "3"}, std::vector<std::string>{"--aic-device-id", "0:1"},
        std::vector<std::string>{}}) {
    const auto out = work() / ("out" + std::to_string(run++));
    std::vector<std::string> args = {"-t",           split_[2].qpcDir.string(), "-n",        "2", "-i",
                                     input.string(), "--write-output-dir",      out.string()};
    args.insert(args.end(), devices.begin(), devices.end());
    const auto r = testing::runTool("qaic-runner", args);
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("InferenceCnt 2 ")) << r.out;
    std::vector<float> y(kRows * kWidth);
    std::ifstream(out / "y-inf-0.bin", std::ios::binary).read(reinterpret_cast<char*>(y.data()), y.size() * 4);
    expectClose(y, want);
  }
  const auto r = testing::runTool("qaic-runner", {"-t", split_[2].qpcDir.string(), "-d", "1"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("needs 2 devices"));
  expectAllFree();
}

}  // namespace
}  // namespace qaic::rt::test
