// SPDX-License-Identifier: Apache-2.0
// libqaic inside partitions, with a real qaic-emu and a real qaicd: a Context that acquires its
// own partition or runs in one the caller holds computes the same outputs as the host executor,
// cannot activate beyond the partition, and the lease ends with the Partition object. Without
// qaicd, acquire fails clearly and contexts keep using whole devices.
#include <stdlib.h>
#include <sys/stat.h>

#include "DeviceAttributes.hpp"
#include "RuntimeFixture.hpp"
#include "runtime/loading/QAicQpcObj.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 32;
constexpr uint32_t kNsps = 8;

class PartitionRuntimeTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 8, "dbcs": 8}], "compute_threads": 1})";
  }
  bool qaicdAtSetUp() const override { return true; }
  void SetUp() override {
    RuntimeTest::SetUp();
    if (HasFatalFailure()) return;
    ::setenv("QAICD_SOCKET", socketPath().c_str(), 1);
    network_ = compile("relu", reluNetworkIr(kElements), {"-aic-num-cores=2"});
  }
  void TearDown() override {
    ::unsetenv("QAICD_SOCKET");
    RuntimeTest::TearDown();
  }

  // Runs `count` inferences on every activation's worth of handles and checks each output.
  void runAndCheck(InferenceSet& set, int count) {
    for (int k = 0; k < count; ++k) {
      std::vector<float> x(kElements), y(kElements, 99.0f);
      for (int i = 0; i < kElements; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + k) % 11) - 5.0f;
      shInferenceHandle h;
      ASSERT_EQ(set.getAvailable(h, 10'000'000), QS_SUCCESS);
      h->setBuffers({heapBuffer(x), heapBuffer(y)});
      set.submit(h, static_cast<uint64_t>(k + 1));
      shInferenceHandle done;
      ASSERT_EQ(set.getCompletedId(done, static_cast<uint64_t>(k + 1), 20'000'000), QS_SUCCESS)
          << (done ? done->getErrorMessage() : "");
      set.putCompleted(done);
      const auto want = expected(network_, {x});
      ASSERT_EQ(want[0].size(), y.size());
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_FLOAT_EQ(y[i], want[0][i]) << "inference " << k << " element " << i;
    }
  }

  Network network_;
};

TEST_F(PartitionRuntimeTest, ResourcesForFollowsTheProgramInfo) {
  const auto& program = network_.qpc->getInfo().program[0];
  uint64_t constants = 0;
  for (const auto& c : network_.qpc->getInfo().constants) constants += c.size;
  const ResourceRequest r = resourcesFor(*network_.qpc, 3);
  EXPECT_EQ(r.numNsp, 3 * program.numCores);
  EXPECT_EQ(r.numNsp, 6u);
  EXPECT_EQ(r.numSem, 3 * program.numSemaphores);
  EXPECT_EQ(r.numMcid, 3 * program.numMcIds);
  EXPECT_EQ(r.numVc, 3u);
  // DDR: each activation's IO region (a device-protocol figure, in the container only) plus the
  // constants once, which the activations of one load share (no retained state here).
  const uint64_t ioRegion = network_.qpc->get()->image->programs()[0].ioRegionSize;
  EXPECT_EQ(r.ddrSize, constants + 3 * ioRegion);
  EXPECT_TRUE(refused([&] { resourcesFor(*network_.qpc, 0); }, QS_INVAL)) << "zero activations";
  EXPECT_TRUE(refused([&] { resourcesFor(*network_.qpc, 0xffffffffu); }, QS_INVAL, "numNsp"))
      << "an overflowing NSP total";
  EXPECT_TRUE(refused([&] { resourcesFor(*network_.qpc, 1, 5); }, QS_INVAL, "program index 5"));
}

TEST_F(PartitionRuntimeTest, AContextAcquiresItsOwnPartitionAndRunsInIt) {
  const ResourceRequest wanted = resourcesFor(*network_.qpc, 1);
  QAicContextProperties properties;
  properties.partition = &wanted;
  auto context = Context::Factory(&properties, {});
  ASSERT_TRUE(context->getPartition());
  const QID id = context->getPartition()->id();
  EXPECT_GE(id, 100u);
  EXPECT_EQ(context->getPartition()->parent(), 0u);
  EXPECT_EQ(context->getPartition()->resources(), wanted);
  ASSERT_EQ(context->getDevices(), std::vector<QID>{id});
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps - 2);
  {
    auto set = InferenceSet::Factory(context, network_.qpc, id, 2, 1);
    EXPECT_EQ(attribute(id, driver::sysfs::kEmuNetworksActive), 1u);
    EXPECT_EQ(attribute(id, driver::sysfs::kEmuNspFree), 0u);
    runAndCheck(*set, 6);
  }
  context.reset();
  EXPECT_FALSE(nodeExists(id)) << "the context's partition outlived it";
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps);
}

TEST_F(PartitionRuntimeTest, ActivationsBeyondThePartitionAreRefused) {
  auto partition = Partition::acquire(resourcesFor(*network_.qpc, 2), 0, "two");
  EXPECT_EQ(partition->label(), "two");
  EXPECT_EQ(partition->node(), emu_->root().nodePath(partition->id()).string());
  auto context = Context::Factory(nullptr, {partition->id()});
  {
    auto set = InferenceSet::Factory(context, network_.qpc, partition->id(), 2, 2);
    runAndCheck(*set, 4);
  }
  try {
    auto tooMany = InferenceSet::Factory(context, network_.qpc, partition->id(), 2, 3);
    ADD_FAILURE() << "three activations ran in a partition sized for two";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NO_RESOURCES) << e.what();
    EXPECT_NE(std::string(e.what()).find("device " + std::to_string(partition->id())), std::string::npos) << e.what();
  }
  // The rest of the device is untouched by the refusal.
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps - 4);
}

TEST_F(PartitionRuntimeTest, TheLeaseEndsWithThePartitionObject) {
  auto partition = Partition::acquire(ResourceRequest{3, 0, 32, 1, 64ull << 20});
  const QID id = partition->id();
  ASSERT_TRUE(nodeExists(id));
  EXPECT_EQ(attribute(id, driver::sysfs::kEmuNspTotal), 3u);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps - 3);
  partition.reset();
  EXPECT_FALSE(nodeExists(id));
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps);
}

TEST_F(PartitionRuntimeTest, ARefusalNamesTheResource) {
  try {
    Partition::acquire(ResourceRequest{kNsps + 1, 0, 0, 1, 0});
    ADD_FAILURE() << "a 9-NSP partition on an 8-NSP device";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NO_RESOURCES);
    EXPECT_NE(std::string(e.what()).find("numNsp"), std::string::npos) << e.what();
  }
  ResourceRequest wanted{1, 0, 0, kNsps + 1, 0};
  QAicContextProperties properties;
  properties.partition = &wanted;
  try {
    Context::Factory(&properties, {0, 1});
    ADD_FAILURE() << "a partition from two devices";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_INVAL);
  }
  try {
    Context::Factory(&properties, {0});
    ADD_FAILURE() << "9 VCs on an 8-VC device";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NO_RESOURCES);
    EXPECT_NE(std::string(e.what()).find("numVc"), std::string::npos) << e.what();
  }
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kNsps);
}

TEST_F(PartitionRuntimeTest, DefaultDevicesExcludeOtherPartitions) {
  auto partition = Partition::acquire(ResourceRequest{1, 0, 32, 1, 64ull << 20});
  auto context = Context::Factory(nullptr, {});
  EXPECT_EQ(context->getDevices(), std::vector<QID>{0});
  EXPECT_FALSE(context->getPartition());
}

TEST_F(PartitionRuntimeTest, WithoutQaicdAcquireFailsClearlyAndWholeDevicesStillWork) {
  ASSERT_TRUE(qaicd_->stop());
  try {
    Partition::acquire(resourcesFor(*network_.qpc, 1));
    ADD_FAILURE() << "acquired a partition with no qaicd";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_NODEV);
    EXPECT_EQ(std::string(e.what()), "qaicd is not running (socket " + socketPath() + ")");
  }
  auto context = Context::Factory(nullptr, {});
  auto set = InferenceSet::Factory(context, network_.qpc, 0, 2, 1);
  runAndCheck(*set, 2);
}

}  // namespace
}  // namespace qaic::rt::test
