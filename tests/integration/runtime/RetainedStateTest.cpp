// SPDX-License-Identifier: Apache-2.0
// Retained state (design cut 7) through the public C++ API on a real qaic-emu: a program compiled
// with -retained-state keeps each activation's state on the device between inferences, the user
// never passes it, and resetRetainedState zeroes it for the next inference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 4;

// acc_RetainedState = acc + x and y = acc + x: each inference adds x to the state and returns
// the new sum. acc / acc_RetainedState become device-resident state under -retained-state.
std::string accumulatorIr() {
  const auto io = [](const std::string& name, const std::string& direction) {
    return R"({"name":")" + name + R"(","tensor":")" + name + R"(","direction":")" + direction +
           R"(","dtype":"TL_FLOAT","dims":[1,)" + std::to_string(kElements) + "]}";
  };
  const auto sum = [](const std::string& name, const std::string& out) {
    return R"({"name":")" + name +
           R"(","optype":"elew","tensors_in":[{"arg_name":"src1","name":"acc"},)"
           R"({"arg_name":"src2","name":"x"}],"tensors_out":[{"arg_name":"dst","name":")" +
           out + R"("}],"params":[{"arg_name":"elew_op","value":"TL_SUM"}]})";
  };
  const std::string ops = sum("update", "acc_RetainedState") + "," + sum("result", "y");
  const std::string ios = io("x", "in") + "," + io("acc", "in") + "," + io("y", "out") + "," +
                          io("acc_RetainedState", "out");
  return R"({"ops":[)" + ops + R"(],"io":[)" + ios + "]}";
}

class RetainedStateTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("accumulator", accumulatorIr(), {"-retained-state"});
    context_ = makeContext();
  }

  // One inference adding `step` to every element of the state; returns y.
  std::vector<float> add(InferenceSet& set, float step, uint64_t id) {
    std::vector<float> x(kElements, step), y(kElements, -1.0f);
    inferOnce(set, {heapBuffer(x), heapBuffer(y)}, id);
    return y;
  }

  Network network_;
};

TEST_F(RetainedStateTest, StateStaysOnTheDeviceAndIsNotInTheBufferMappings) {
  const auto mappings = network_.qpc->getBufferMappings();
  ASSERT_EQ(mappings.size(), 2u);
  EXPECT_EQ(mappings[0].bufferName, "x");
  EXPECT_EQ(mappings[1].bufferName, "y");

  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  EXPECT_EQ(add(*set, 1.0f, 1), std::vector<float>(kElements, 1.0f)) << "state starts as zeros";
  EXPECT_EQ(add(*set, 1.0f, 2), std::vector<float>(kElements, 2.0f));
  EXPECT_EQ(add(*set, 0.5f, 3), std::vector<float>(kElements, 2.5f));
}

TEST_F(RetainedStateTest, ResetRetainedStateZeroesTheStateForTheNextInference) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  add(*set, 3.0f, 1);
  EXPECT_EQ(add(*set, 3.0f, 2), std::vector<float>(kElements, 6.0f));
  set->resetRetainedState(0);
  EXPECT_EQ(add(*set, 1.0f, 3), std::vector<float>(kElements, 1.0f));
  EXPECT_EQ(add(*set, 1.0f, 4), std::vector<float>(kElements, 2.0f)) << "the state grows again";
}

TEST_F(RetainedStateTest, ResetOfAnActivationTheSetDoesNotHaveIsInval) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  EXPECT_TRUE(refused([&] { set->resetRetainedState(7); }, QS_INVAL));
  EXPECT_EQ(add(*set, 2.0f, 1), std::vector<float>(kElements, 2.0f));
}

}  // namespace
}  // namespace qaic::rt::test
