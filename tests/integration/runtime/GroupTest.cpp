// SPDX-License-Identifier: Apache-2.0
// Over-subscription (seed 001): two sets that cannot both be active share the device's NSPs
// through an InferenceSetGroup, switching transparently; the three constraints are enforced.
#include <thread>

#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

class GroupTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override { return R"({"devices":[{"nsps":4}]})"; }

  void SetUp() override {
    RuntimeTest::SetUp();
    context_ = makeContext();
    add_ = compile("add4", addNetworkIr(16), {"-aic-num-cores=4"});
    relu_ = compile("relu4", reluNetworkIr(16), {"-aic-num-cores=4"});
  }

  Network add_, relu_;
};

TEST_F(GroupTest, WithoutAGroupTheSecondSetDoesNotFit) {
  auto first = InferenceSet::Factory(context_, add_.qpc, 0, 1, 1);
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context_, relu_.qpc, 0, 1, 1); }), QS_NO_RESOURCES);
}

TEST_F(GroupTest, MembersShareTheNspsAndSwitchTransparently) {
  InferenceSetProperties properties;
  properties.inferenceSetGroup = InferenceSetGroup::Factory();
  properties.name = "add";
  auto addSet = InferenceSet::Factory(context_, add_.qpc, 0, 2, 1, &properties);
  properties.name = "relu";
  auto reluSet = InferenceSet::Factory(context_, relu_.qpc, 0, 2, 1, &properties);
  EXPECT_FALSE(properties.inferenceSetGroup->isEnabled());

  // Alternate between the two programs from two threads; each result must be its program's.
  std::atomic<int> wrong{0};
  auto runAdd = [&] {
    for (int k = 0; k < 6; ++k) {
      std::vector<float> a(16, static_cast<float>(k)), b(16, 1.0f), c(16, -1.0f);
      shInferenceHandle h;
      if (addSet->getAvailable(h, 5'000'000) != QS_SUCCESS) {
        ++wrong;
        return;
      }
      h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
      addSet->submit(h, static_cast<uint64_t>(k));
      shInferenceHandle done;
      if (addSet->getCompletedId(done, static_cast<uint64_t>(k), 30'000'000) != QS_SUCCESS || c[9] != k + 1.0f) ++wrong;
      if (done) addSet->putCompleted(done);
    }
  };
  auto runRelu = [&] {
    for (int k = 0; k < 6; ++k) {
      std::vector<float> x(16, -2.0f), y(16, 5.0f);
      x[3] = static_cast<float>(k);
      shInferenceHandle h;
      if (reluSet->getAvailable(h, 5'000'000) != QS_SUCCESS) {
        ++wrong;
        return;
      }
      h->setBuffers({heapBuffer(x), heapBuffer(y)});
      reluSet->submit(h, static_cast<uint64_t>(k));
      shInferenceHandle done;
      if (reluSet->getCompletedId(done, static_cast<uint64_t>(k), 30'000'000) != QS_SUCCESS || y[0] != 0.0f ||
          y[3] != static_cast<float>(k))
        ++wrong;
      if (done) reluSet->putCompleted(done);
    }
  };
  std::thread t1(runAdd), t2(runRelu);
  t1.join();
  t2.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_TRUE(properties.inferenceSetGroup->isEnabled()) << "the first submit enabled the group";
}

TEST_F(GroupTest, ConstraintsAreEnforced) {
  auto group = InferenceSetGroup::Factory("constraints");
  InferenceSetProperties properties;
  properties.inferenceSetGroup = group;
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context_, add_.qpc, 0, 1, 2, &properties); }), QS_INVAL)
      << "constraint 1: numActivations must be 1";
  auto first = InferenceSet::Factory(context_, add_.qpc, 0, 1, 1, &properties);
  group->enable();
  EXPECT_TRUE(group->isEnabled());
  EXPECT_EQ(statusOf([&] { InferenceSet::Factory(context_, relu_.qpc, 0, 1, 1, &properties); }), QS_WRONG_STATE)
      << "constraint 3: no new member while enabled";
  group->disable();
  EXPECT_FALSE(group->isEnabled());
  auto second = InferenceSet::Factory(context_, relu_.qpc, 0, 1, 1, &properties);
  group->enable();  // constraint 2: enabled together
  std::vector<float> x(16, -1.0f), y(16, 9.0f);
  shInferenceHandle h;
  ASSERT_EQ(second->getAvailable(h, 1'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(x), heapBuffer(y)});
  second->submit(h, 1);
  shInferenceHandle done;
  ASSERT_EQ(second->getCompletedId(done, 1, 30'000'000), QS_SUCCESS) << done->getErrorMessage();
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_EQ(InferenceSetGroup::Factory("constraints"), group) << "named groups are registered";
  group->release();
  EXPECT_NE(InferenceSetGroup::Factory("constraints"), group);
}

}  // namespace
}  // namespace qaic::rt::test
