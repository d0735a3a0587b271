// SPDX-License-Identifier: Apache-2.0
// Activations, devices and contexts: numActivations up to the free NSPs and a clear error
// beyond, devMapping, missing devices, log levels and context ids.
#include "MultiDeviceProgram.hpp"
#include "ReluProgram.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

class ActivationTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override { return R"({"devices":[{"nsps":4}]})"; }
};

TEST_F(ActivationTest, ActivationsUpToTheFreeNspsThenAClearError) {
  auto context = makeContext();
  auto network = compile("add2", addNetworkIr(16), {"-aic-num-cores=2"});
  auto set = InferenceSet::Factory(context, network.qpc, 0, 2, 2);
  EXPECT_EQ(set->getNumActivations(), 2u);
  // Every activation computes.
  std::vector<std::shared_ptr<InferenceHandle>> handles(4);
  std::vector<std::vector<float>> a(4, std::vector<float>(16)), b(4, std::vector<float>(16, 1.0f)),
      c(4, std::vector<float>(16));
  for (std::size_t k = 0; k < 4; ++k) {
    std::fill(a[k].begin(), a[k].end(), static_cast<float>(k));
    ASSERT_EQ(set->getAvailable(handles[k], 1'000'000), QS_SUCCESS);
    handles[k]->setBuffers({heapBuffer(a[k]), heapBuffer(b[k]), heapBuffer(c[k])});
    set->submit(handles[k], k);
  }
  ASSERT_EQ(set->waitForCompletion(20'000'000), QS_SUCCESS);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(handles[k]->getStatus(), QS_SUCCESS) << handles[k]->getErrorMessage();
    EXPECT_FLOAT_EQ(c[k][7], static_cast<float>(k) + 1.0f);
  }

  // What is free comes from the device's status query.
  EXPECT_TRUE(
      refused([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 1); }, QS_NO_RESOURCES, "1 activation of "));
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 1); }, QS_NO_RESOURCES,
                      " needs 2 NSPs, 1 DBC, "));
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 1); }, QS_NO_RESOURCES,
                      "; the device has 0 NSPs, "));
  set.reset();  // its NSPs come back
  EXPECT_NO_THROW(InferenceSet::Factory(context, network.qpc, 0, 1, 2));
}

TEST_F(ActivationTest, BadArgumentsAreRefused) {
  auto context = makeContext();
  auto network = compile("add", addNetworkIr(16));
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, network.qpc, 0, 0, 1); }), QS_INVAL);
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 0); }), QS_INVAL);
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, nullptr, 0, 1, 1); }), QS_INVAL);
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, network.qpc, 7, 1, 1); }), QS_INVAL);
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {3};
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 1, &properties); }), QS_INVAL);
  properties.programProperties.devMapping = {0};
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context, network.qpc, 0, 1, 1, &properties); }), QS_SUCCESS);
}

// Until the runtime runs a program across devices, it refuses one cleanly, before it reserves
// anything: one part alone would compute a wrong answer.
// A host of one card cannot run a program of two parts (MultiDeviceTest runs them on four).
TEST_F(ActivationTest, AMultiDeviceProgramIsRefusedNamingItsDeviceCount) {
  auto context = makeContext();
  const auto bytes = testing::multiDeviceReluProgram({0, 1}, 4);
  auto split = Qpc::Factory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, split, 0, 1, 1); }, QS_NODEV,
                      "<memory> has 2 device parts and needs 2 devices; the context has 1 (0)"));
  // Its 4 NSPs were never reserved: the same program on one device takes all of them.
  const auto single = testing::reluProgram(4);
  auto whole = Qpc::Factory(reinterpret_cast<const uint8_t*>(single.data()), single.size());
  EXPECT_NO_THROW(InferenceSet::Factory(context, whole, 0, 1, 1));
}

TEST_F(ActivationTest, ContextFindsDevicesAndRefusesMissingOnes) {
  std::vector<std::string> messages;
  auto context = Context::Factory(nullptr, {}, [&](QLogLevel, const char* m, void*) { messages.push_back(m); });
  EXPECT_EQ(context->getDevices(), (std::vector<QID>{0}));
  context->setLogLevel(QL_DEBUG);
  EXPECT_EQ(context->getLogLevel(), QL_DEBUG);
  context->setLogLevel(QL_ERROR);
  EXPECT_EQ(context->getLogLevel(), QL_ERROR);
  auto second = makeContext();
  EXPECT_NE(context->getId(), second->getId());
  EXPECT_TRUE(refused([] { Context::Factory(nullptr, {5}); }, QS_NODEV, "accel5")) << "device 5 does not exist";
  ::setenv("QAIC_ROOT", (work_ / "empty").c_str(), 1);
  EXPECT_THROW(Context::Factory(nullptr, {}), Error);
}

TEST_F(ActivationTest, LogLevelFiltersTheLogCallback) {
  std::vector<QLogLevel> levels;
  QAicContextProperties properties;
  properties.initialLogLevel = QL_INFO;
  auto context = Context::Factory(&properties, {}, [&](QLogLevel l, const char*, void*) { levels.push_back(l); });
  EXPECT_FALSE(levels.empty()) << "context creation logs at QL_INFO";
  levels.clear();
  context->setLogLevel(QL_ERROR);
  auto network = compile("add", addNetworkIr(16));
  auto set = InferenceSet::Factory(context, network.qpc, 0, 1, 1);
  for (QLogLevel l : levels) EXPECT_GE(l, QL_ERROR);
}

}  // namespace
}  // namespace qaic::rt::test
