// Where a plan's tensors live (MemoryPlan.hpp) and constants packed once for several programs
// (ConstantPacking.hpp): results stay right while memory shrinks.
#include <gtest/gtest.h>

#include <cstring>

#include "GraphBuilder.hpp"
#include "base/CacheLineAllocator.hpp"
#include "ir/Weights.hpp"

namespace qaic::kernels::test {
namespace {

// A chain of element-wise ops: each intermediate dies as the next is written, so the arena
// holds two of them at a time however long the chain.
TEST(KernelsMemoryPlan, ArenaHoldsTheLiveSetNotEveryTensor) {
  constexpr int64_t kN = 4096;
  constexpr int kLength = 12;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kN});
  std::string previous = "x";
  for (int i = 0; i < kLength; ++i) {
    const std::string next = i + 1 == kLength ? "y" : "t" + std::to_string(i);
    g.op("add" + std::to_string(i), "elew", {{"src1", previous}, {"src2", previous}}, {{"dst", next}},
         {{"elew_op", "TL_SUM"}});
    previous = next;
  }
  g.output("y", "TL_FLOAT", {kN});
  auto program = HostProgram::build(g.graph(), nullptr);
  const std::size_t tensorBytes = kN * sizeof(float);
  EXPECT_LE(program->activationBytes(), 3 * tensorBytes);  // x, y and the live intermediates
  const auto x = randomFloats(kN, 7);
  const auto y = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {kN}, x)})[0].values<float>();
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_FLOAT_EQ(y[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)] * 4096.0f);
}

// A reshape is a view of its source: the plan holds the data once and computes through it.
TEST(KernelsMemoryPlan, ReshapeIsAViewOfItsSource) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {4, 256})
      .op("r", "relu", {{"src", "x"}}, {{"dst", "a"}})
      .op("view", "reshape", {{"src", "a"}}, {{"dst", "b"}}, {{"dims", {1024}}})
      .op("s", "sigmoid", {{"src", "b"}}, {{"dst", "y"}})
      .output("y", "TL_FLOAT", {1024});
  auto program = HostProgram::build(g.graph(), nullptr);
  EXPECT_LE(program->activationBytes(), 3 * 1024 * sizeof(float));  // x, a (= b), y
  const auto x = randomFloats(1024, 3);
  const auto y = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {4, 256}, x)})[0].values<float>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], 1.0f / (1.0f + std::exp(-std::max(x[i], 0.0f))), 1e-6f);
}

// Constant data aligned like a container's, looked up by name.
struct Constants {
  std::vector<float, CacheLineAllocator<float>> weight;
  ir::WeightTensor view;
  ConstantLookup lookup() {
    view.data = std::as_bytes(std::span(weight.data(), weight.size()));
    return [this](std::string_view name) { return name == view.name ? &view : nullptr; };
  }
};

ir::Graph convNet(bool alsoOutputWeight) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 16, 8, 8})
      .create("w", "TL_FLOAT", {16, 16, 3, 3}, {}, {0, 0}, true)
      .create("b", "TL_FLOAT", {16}, {0.5})
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}},
          {{"group", 1},
           {"size", {3, 3}},
           {"stride", {1, 1}},
           {"padding", {1, 1, 1, 1}},
           {"dilation", {1, 1}},
           {"autopad", "NOTSET"}})
      .output("y", "TL_FLOAT", {1, 16, 8, 8});
  if (alsoOutputWeight) {
    g.op("plain", "reshape", {{"src", "w"}}, {{"dst", "wflat"}}, {{"dims", {16 * 16 * 9}}})
        .output("wflat", "TL_FLOAT", {16 * 16 * 9});
  }
  return g.graph();
}

// Programs sharing a ConstantPacking (the emulator's activations of one load) pack a weight once,
// in its own bytes; each computes what a program with a private packed copy computes, and one
// that reads the weight plainly gets the plain values back.
TEST(KernelsMemoryPlan, SharedPackingRewritesAConstantOnceAndStaysCorrect) {
  Constants constants;
  const auto weights = randomFloats(16 * 16 * 9, 11);
  constants.weight.assign(weights.begin(), weights.end());
  constants.view = {"w", ir::DType::Float, {16, 16, 3, 3}, {}};
  const auto x = randomFloats(16 * 64, 12);
  const std::vector<HostTensor> input = {HostTensor::of(ir::DType::Float, {1, 16, 8, 8}, x)};

  Constants reference = constants;
  const auto expected = runGraph(convNet(false), input, reference.lookup())[0].values<float>();

  BuildOptions shared;
  shared.packing = makeConstantPacking();
  const auto first = runGraph(convNet(false), input, constants.lookup(), shared)[0].values<float>();
  const bool rewritten = std::memcmp(constants.weight.data(), weights.data(), weights.size() * sizeof(float)) != 0;
  const auto second = runGraph(convNet(false), input, constants.lookup(), shared)[0].values<float>();
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
  // Rewritten in place, or (a padded layout) packed aside with the plain pages given back:
  // either way the plain bytes are gone, and a program reading the weight plainly gets it back.
  EXPECT_TRUE(rewritten);
  const auto outputs = runGraph(convNet(true), input, constants.lookup(), shared);
  EXPECT_EQ(outputs[0].values<float>(), expected);
  EXPECT_EQ(outputs[1].values<float>(), weights);
}

}  // namespace
}  // namespace qaic::kernels::test
