// SPDX-License-Identifier: Apache-2.0
// The card's memory is a real limit (issue 38 item 2), on a real qaic-emu started with a small
// DDR (--ddr-mb): a program's constants are charged once per load and its IO region and retained
// state per activation, exactly as container::deviceMemoryNeeds says; what does not fit is
// refused before anything is built with a message naming the sizes; everything comes back when
// the sets go; qaicd and qaic-util -q report the live figures.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ContainerFiles.hpp"
#include "DeviceClient.hpp"
#include "IrGraphs.hpp"
#include "Process.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr int kInputs = 1000;
constexpr int kOutputs = 10000;
constexpr uint64_t kWeightBytes = uint64_t{kInputs} * kOutputs * sizeof(float);  // 40,000,000

// y = x . W (W: 40 MB from the weights file) and acc_RetainedState = acc + y, so that the
// program holds ~40 MB of constants and kOutputs floats of retained state per activation.
std::string projectionIr() {
  const auto io = [](const std::string& name, const std::string& direction, int width) {
    return R"({"name":")" + name + R"(","tensor":")" + name + R"(","direction":")" + direction +
           R"(","dtype":"TL_FLOAT","dims":[1,)" + std::to_string(width) + "]}";
  };
  const std::string weights =
      R"({"name":"weights","optype":"create","tensors_in":[],"tensors_out":[{"arg_name":"dst","name":"w"}],)"
      R"("params":[{"arg_name":"dtype","value":"TL_FLOAT"},{"arg_name":"dims","value":[)" +
      std::to_string(kInputs) + "," + std::to_string(kOutputs) +
      R"(]},{"arg_name":"data","value":[0]},{"arg_name":"ran","value":[0,0]},)"
      R"({"arg_name":"from_file","value":true}]})";
  const std::string project =
      R"({"name":"project","optype":"matmul","tensors_in":[{"arg_name":"src1","name":"x"},)"
      R"({"arg_name":"src2","name":"w"}],"tensors_out":[{"arg_name":"dst","name":"y"}],"params":[]})";
  const std::string accumulate =
      R"({"name":"accumulate","optype":"elew","tensors_in":[{"arg_name":"src1","name":"acc"},)"
      R"({"arg_name":"src2","name":"y"}],"tensors_out":[{"arg_name":"dst","name":"acc_RetainedState"}],)"
      R"("params":[{"arg_name":"elew_op","value":"TL_SUM"}]})";
  return R"({"weights":"projection.weights","ops":[)" + weights + "," + project + "," + accumulate + R"(],"io":[)" +
         io("x", "in", kInputs) + "," + io("acc", "in", kOutputs) + "," + io("y", "out", kOutputs) + "," +
         io("acc_RetainedState", "out", kOutputs) + "]}";
}

class DeviceMemoryTest : public RuntimeTest {
 protected:
  virtual uint64_t ddrMb() const { return 64; }
  // -v: the daemon's refusals are logged on its stderr (emu_->log()).
  std::vector<std::string> emulatorArguments() const override { return {"--ddr-mb", std::to_string(ddrMb()), "-v"}; }

  void SetUp() override {
    RuntimeTest::SetUp();
    std::vector<float> values(static_cast<std::size_t>(kInputs) * kOutputs);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 7) * 0.125f;
    ir::WeightTensor w{"w", ir::DType::Float, {kInputs, kOutputs}, std::as_bytes(std::span(values))};
    ir::writeWeightsFile((work() / "projection.weights").string(), std::span(&w, 1));
    network_ = compile("projection", projectionIr(), {"-retained-state"});
    image_ = container::QpcImage::open((network_.qpcDir / "programqpc.bin").string());
    context_ = makeContext();
  }

  container::DeviceMemoryNeeds needs(uint32_t activations) const {
    return container::deviceMemoryNeeds(image_->contents(), image_->programs().at(0), activations);
  }

  // Device 0's free device memory in bytes, as qaicd's devices answer reports it.
  uint64_t ddrFree(qaicd::QaicdClient& client) const {
    auto devices = client.devices();
    EXPECT_TRUE(devices.ok()) << devices.message();
    if (!devices.ok() || devices->empty()) return 0;
    EXPECT_EQ(devices->front().total.ddrSize, ddrMb() * kMiB);
    return devices->front().free.ddrSize;
  }

  Network network_;
  std::unique_ptr<container::QpcImage> image_;
};

TEST_F(DeviceMemoryTest, ConstantsOnceIoRegionAndRetainedStatePerActivation) {
  const auto one = needs(1);
  EXPECT_EQ(one.constants, kWeightBytes) << "the weights are the program's constants";
  EXPECT_EQ(one.retainedState, uint64_t{kOutputs} * sizeof(float)) << "acc is the retained state";
  EXPECT_GT(one.ioRegion, 0u);
  EXPECT_EQ(needs(2).total(), one.constants + 2 * (one.ioRegion + one.retainedState)) << "constants once";

  startQaicd();
  auto client = connect();
  const uint64_t total = ddrMb() * kMiB;
  ASSERT_EQ(ddrFree(client), total);
  {
    // Two activations of one load fit only because the constants are charged once: the
    // reservation is exactly constants + 2 x (IO region + retained state), and the emulator
    // charges both activations against it.
    auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 2);
    EXPECT_EQ(ddrFree(client), total - needs(2).total());
    // The program runs: y = x . W, and the state accumulates y.
    std::vector<float> x(kInputs, 1.0f), y(kOutputs, -1.0f);
    const auto want = expected(network_, {x, std::vector<float>(kOutputs, 0.0f)});
    inferOnce(*set, {heapBuffer(x), heapBuffer(y)}, 1);
    EXPECT_NEAR(y[0], want[0][0], 1e-2f);
    EXPECT_NEAR(y[kOutputs - 1], want[0][kOutputs - 1], 1e-2f);
  }
  EXPECT_EQ(ddrFree(client), total) << "the set gave every byte back";

  auto first = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  EXPECT_EQ(ddrFree(client), total - one.total());
  // qaic-util -q prints the same live figures in the vendor's lines.
  const auto query = testing::runTool("qaic-util", {"-q", "-d", "0"});
  EXPECT_EQ(query.exitCode, 0) << query.err;
  EXPECT_NE(query.out.find("\tDram Total:" + std::to_string(ddrMb()) + " MB\n"), std::string::npos) << query.out;
  EXPECT_NE(query.out.find("\tDram Free:" + std::to_string((total - one.total()) / kMiB) + " MB\n"), std::string::npos)
      << query.out;

  // A second load of the program no longer fits: refused before anything is built, naming the
  // sizes, and nothing is left charged.
  try {
    auto second = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
    FAIL() << "a second load fitted in " << ddrFree(client) << " bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NO_RESOURCES);
    const std::string message = e.what();
    EXPECT_NE(message.find("device 0: program '"), std::string::npos) << message;
    EXPECT_NE(message.find("needs " + container::describeDeviceMemory(one)), std::string::npos) << message;
    EXPECT_NE(message.find("constants 38.1 MiB, 1 activation x (IO region "), std::string::npos) << message;
    EXPECT_NE(message.find(" + retained state 39.1 KiB))"), std::string::npos) << message;
    EXPECT_NE(message.find("; " + container::deviceMemoryText(total - one.total()) + " of 64.0 MiB free"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(ddrFree(client), total - one.total()) << "the refusal left a charge";
  first.reset();
  EXPECT_EQ(ddrFree(client), total);
}

// Occurrences of `text` in `log`.
std::size_t countOf(const std::string& log, const std::string& text) {
  std::size_t count = 0;
  for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
  return count;
}

// The same charges through the uAPI alone (no resource group: activations draw from the device):
// a load's activations share its constants, a second load of the program does not fit, and each
// deactivation and the file's close give back exactly what was charged.
TEST_F(DeviceMemoryTest, ActivationsOfOneLoadShareItsConstantsOnTheDevice) {
  auto node = driver::DeviceNode::open(root(), 0);
  ASSERT_TRUE(node) << node.message();
  std::ifstream file(network_.qpcDir / "programqpc.bin", std::ios::binary);
  const std::string read{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  ASSERT_GT(read.size(), kWeightBytes);
  const auto container = std::as_bytes(std::span(read.data(), read.size()));
  const auto ddrFreeNow = [&] {
    auto status = driver::queryDeviceStatus(*node);
    EXPECT_TRUE(status) << status.message();
    return status ? status->ddrFreeBytes : 0;
  };
  const uint64_t total = ddrMb() * kMiB;
  ASSERT_EQ(ddrFreeNow(), total);

  ASSERT_TRUE(driver::loadProgram(*node, container, 1));
  EXPECT_EQ(ddrFreeNow(), total) << "a load without activations holds no device memory";
  auto first = driver::activate(*node, 1, 0, 16, 0);
  ASSERT_TRUE(first) << first.message();
  EXPECT_EQ(ddrFreeNow(), total - needs(1).total());
  auto second = driver::activate(*node, 1, 0, 16, 0);
  ASSERT_TRUE(second) << second.message();
  EXPECT_EQ(ddrFreeNow(), total - needs(2).total()) << "the second activation was charged the constants again";

  // A second load's first activation brings the constants again: they do not fit.
  ASSERT_TRUE(driver::loadProgram(*node, container, 2));
  auto refused = driver::activate(*node, 2, 0, 16, 0);
  ASSERT_FALSE(refused) << "38 MB of constants fitted twice in 64 MiB";
  EXPECT_EQ(refused.error(), ENOMEM) << refused.message();
  EXPECT_EQ(ddrFreeNow(), total - needs(2).total()) << "the refusal left a charge";
  EXPECT_EQ(countOf(emu_->log(), "activate load 2: program '"), 1u) << emu_->log();
  EXPECT_NE(emu_->log().find("needs " + container::describeDeviceMemory(needs(1)) + "; " +
                             container::deviceMemoryText(total - needs(2).total()) + " of 64.0 MiB free: ENOMEM"),
            std::string::npos)
      << emu_->log();

  // The constants stay while any activation of the load does, even once it is unloaded.
  ASSERT_TRUE(driver::deactivate(*node, *first));
  EXPECT_EQ(ddrFreeNow(), total - needs(1).total());
  ASSERT_TRUE(driver::releaseProgram(*node, 1));
  EXPECT_EQ(ddrFreeNow(), total - needs(1).total()) << "constants freed under a running activation";
  ASSERT_TRUE(driver::deactivate(*node, *second));
  EXPECT_EQ(ddrFreeNow(), total);

  // A reset ends the activations and with them the constants (the load itself stays).
  auto beforeReset = driver::activate(*node, 2, 0, 16, 0);
  ASSERT_TRUE(beforeReset) << beforeReset.message();
  EXPECT_EQ(ddrFreeNow(), total - needs(1).total());
  writeSysfs(driver::sysfs::kFaultReset, "1");
  EXPECT_TRUE(testing::eventually([&] { return ddrFreeNow() == total; })) << ddrFreeNow();

  // Closing the file gives back what its activations held.
  auto third = driver::activate(*node, 2, 0, 16, 0);
  ASSERT_TRUE(third) << third.message();
  EXPECT_EQ(ddrFreeNow(), total - needs(1).total());
  node = driver::DeviceNode::open(root(), 0);  // the old file closes
  ASSERT_TRUE(node) << node.message();
  EXPECT_TRUE(testing::eventually([&] { return ddrFreeNow() == total; })) << ddrFreeNow();
  EXPECT_EQ(attribute(0, "qaic-emu/dram_free"), ddrMb());
}

// qaicd lists each partition's device memory beside the device's: the partition's capacity, and
// what the activations made on its node left free.
TEST_F(DeviceMemoryTest, QaicdReportsDeviceAndPartitionMemory) {
  startQaicd();
  auto client = connect();
  const uint64_t total = ddrMb() * kMiB;
  const uint64_t capacity = 48 * kMiB;
  auto partition = client.createPartition(Resources{2, 0, 64, 2, capacity}, 0u, "ddr");
  ASSERT_TRUE(partition) << partition.message();
  EXPECT_EQ(ddrFree(client), total - capacity) << "the partition's memory left the device's free";

  const auto usageOf = [&](uint32_t id) -> std::optional<qaicd::PartitionUsage> {
    auto devices = client.devices();
    if (!devices || devices->empty()) return std::nullopt;
    for (const auto& usage : devices->front().partitionUsage)
      if (usage.id == id) return usage;
    return std::nullopt;
  };
  auto usage = usageOf(partition->id);
  ASSERT_TRUE(usage) << "partition " << partition->id << " has no figures in the devices answer";
  EXPECT_EQ(usage->total.ddrSize, capacity);
  EXPECT_EQ(usage->free.ddrSize, capacity);

  auto node = driver::DeviceNode::open(root(), partition->id);
  ASSERT_TRUE(node) << node.message();
  std::ifstream file(network_.qpcDir / "programqpc.bin", std::ios::binary);
  const std::string read{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  ASSERT_TRUE(driver::loadProgram(*node, std::as_bytes(std::span(read.data(), read.size())), 1));
  auto dbc = driver::activate(*node, 1, 0, 16, 0);
  ASSERT_TRUE(dbc) << dbc.message();
  usage = usageOf(partition->id);
  ASSERT_TRUE(usage);
  EXPECT_EQ(usage->free.ddrSize, capacity - needs(1).total());
  EXPECT_EQ(ddrFree(client), total - capacity) << "a partition's activation charged the device";
  // qaic-util list shows qaicd's figure.
  ::setenv("QAICD_SOCKET", socketPath().c_str(), 1);
  const auto listed = testing::runTool("qaic-util", {"list", "-j"});
  ::unsetenv("QAICD_SOCKET");
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  const auto doc = nlohmann::json::parse(listed.out);
  EXPECT_EQ(doc["source"], "qaicd");
  ASSERT_EQ(doc["partitions"].size(), 1u) << listed.out;
  EXPECT_EQ(doc["partitions"][0]["ddr_free_mb"], (capacity - needs(1).total()) >> 20) << listed.out;

  ASSERT_TRUE(driver::deactivate(*node, *dbc));
  usage = usageOf(partition->id);
  ASSERT_TRUE(usage);
  EXPECT_EQ(usage->free.ddrSize, capacity);
}

// A device smaller than the program's constants: the load fails with the sizes.
class SmallDeviceMemoryTest : public DeviceMemoryTest {
 protected:
  uint64_t ddrMb() const override { return 32; }
};

TEST_F(SmallDeviceMemoryTest, ProgramLargerThanTheDeviceFailsAtLoad) {
  try {
    auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
    FAIL() << "a program with 38.1 MiB of constants loaded into 32 MiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NO_RESOURCES);
    EXPECT_NE(std::string(e.what()).find("needs " + container::describeDeviceMemory(needs(1)) +
                                         "; 32.0 MiB of 32.0 MiB free"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(attribute(0, "qaic-emu/dram_free"), 32u) << "nothing stayed charged (MiB)";

  // qaic-runner prints the same error and fails; the emulator logged one line for each refusal.
  const auto runner = testing::runTool("qaic-runner", {"-t", network_.qpcDir.string(), "-n", "1"});
  EXPECT_NE(runner.exitCode, 0) << runner.out;
  EXPECT_NE(runner.err.find("needs " + container::describeDeviceMemory(needs(1)) + "; 32.0 MiB of 32.0 MiB free"),
            std::string::npos)
      << runner.err;
  EXPECT_EQ(countOf(emu_->log(), "of device memory refused; 32.0 MiB of 32.0 MiB free: ENOMEM"), 2u) << emu_->log();
  EXPECT_EQ(attribute(0, "qaic-emu/dram_free"), 32u);
}

}  // namespace
}  // namespace qaic::rt::test
