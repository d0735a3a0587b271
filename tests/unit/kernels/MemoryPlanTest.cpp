// SPDX-License-Identifier: Apache-2.0
// Where a plan's tensors live (MemoryPlan.hpp) and constants packed once for several programs
// (ConstantPacking.hpp): results stay right while memory shrinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "GraphBuilder.hpp"
#include "IrGraphs.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/ops/ConstantPacking.hpp"

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
  CacheLineVector<float> weight;
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
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, sameSizeConv3x3())
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

// A float constant stored as float16 (a half-precision export's weight, -convert-to-fp16) is
// widened once for every program sharing a ConstantPacking (a load's specializations), and each
// computes with the widened values.
TEST(KernelsMemoryPlan, AFloat16StoredConstantIsWidenedOnceForEveryProgram) {
  constexpr int64_t kN = 1024;
  const auto table = randomFloats(kN, 21);
  CacheLineVector<uint16_t> halves(kN);
  std::vector<float> widened(kN);
  for (int64_t i = 0; i < kN; ++i) {
    halves[static_cast<std::size_t>(i)] = floatToHalf(table[static_cast<std::size_t>(i)]);
    widened[static_cast<std::size_t>(i)] = halfToFloat(halves[static_cast<std::size_t>(i)]);
  }
  const ir::WeightTensor stored{"w", ir::DType::Float16, {kN}, std::as_bytes(std::span(halves.data(), halves.size()))};
  const ConstantLookup lookup = [&](std::string_view name) { return name == "w" ? &stored : nullptr; };
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kN})
      .create("w", "TL_FLOAT", {kN}, {}, {0, 0}, true)
      .op("add", "elew", {{"src1", "x"}, {"src2", "w"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}})
      .output("y", "TL_FLOAT", {kN});
  const auto x = randomFloats(kN, 22);
  const std::vector<HostTensor> input = {HostTensor::of(ir::DType::Float, {kN}, x)};
  BuildOptions shared;
  shared.packing = makeConstantPacking();
  const auto first = runGraph(g.graph(), input, lookup, shared)[0].values<float>();
  const std::byte* copy = shared.packing->widened("w", stored.data);
  const auto second = runGraph(g.graph(), input, lookup, shared)[0].values<float>();
  EXPECT_EQ(shared.packing->widened("w", stored.data), copy);  // the same copy, not one per program
  EXPECT_TRUE(shared.packing->isWidened("w", copy));
  for (int64_t i = 0; i < kN; ++i) {
    const auto k = static_cast<std::size_t>(i);
    ASSERT_EQ(first[k], x[k] + widened[k]) << i;
    ASSERT_EQ(second[k], x[k] + widened[k]) << i;
  }
  // Without a shared registry each program widens into memory of its own, with the same result.
  EXPECT_EQ(runGraph(g.graph(), input, lookup)[0].values<float>(), first);
}

// Bound io memory is the tensors' own; a run given views of other memory (the emulated NSP
// reading a client's DMA buffer) gets a plan of its own over them where that costs less memory
// than the copies it saves, copies otherwise, and always copies views that alias one another.
TEST(KernelsMemoryPlan, ReboundPlansReadAndWriteOtherMemoryInPlace) {
  constexpr std::size_t kN = 1024;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {static_cast<int64_t>(kN)})
      .op("r", "relu", {{"src", "x"}}, {{"dst", "y"}})
      .output("y", "TL_FLOAT", {static_cast<int64_t>(kN)});
  std::vector<float> boundIn(kN), boundOut(kN);
  BuildOptions options;
  options.inputMemory = {{boundIn.data(), kN * sizeof(float)}};
  options.outputMemory = {{boundOut.data(), kN * sizeof(float)}};
  options.reboundPlans = 2;
  auto program = HostProgram::build(g.graph(), nullptr, options);
  auto relu = [&](std::vector<float>& in, std::vector<float>& out) {
    TensorView x{ir::DType::Float, {static_cast<int64_t>(kN)}, in.data(), in.size() * sizeof(float)};
    TensorView y{ir::DType::Float, {static_cast<int64_t>(kN)}, out.data(), out.size() * sizeof(float)};
    program->run(std::span(&x, 1), std::span(&y, 1));
  };
  auto expectRelu = [](const std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], std::max(x[i], 0.0f)) << i;
  };
  const auto x = randomFloats(kN, 11);
  // Two further memory pairs get plans of their own: nothing copied, results right.
  std::vector<float> in1 = x, out1(kN), in2 = x, out2(kN);
  for (int round = 0; round < 2; ++round) {
    relu(in1, out1);
    EXPECT_TRUE(program->inPlace(ir::Direction::In, 0));
    EXPECT_TRUE(program->inPlace(ir::Direction::Out, 0));
    expectRelu(x, out1);
    relu(in2, out2);
    EXPECT_TRUE(program->inPlace(ir::Direction::In, 0));
    expectRelu(x, out2);
  }
  EXPECT_TRUE(std::all_of(boundOut.begin(), boundOut.end(), [](float v) { return v == 0.0f; }));
  // A third pair finds the plans used up: copied, still right.
  std::vector<float> in3 = x, out3(kN);
  relu(in3, out3);
  EXPECT_FALSE(program->inPlace(ir::Direction::In, 0));
  EXPECT_FALSE(program->inPlace(ir::Direction::Out, 0));
  expectRelu(x, out3);
  // Input and output in the same memory: copied in, computed, copied out.
  std::vector<float> both = x;
  relu(both, both);
  EXPECT_FALSE(program->inPlace(ir::Direction::In, 0));
  EXPECT_FALSE(program->inPlace(ir::Direction::Out, 0));
  expectRelu(x, both);
  // Partly overlapping: the output starts a quarter into the input.
  std::vector<float> wide(kN + kN / 4);
  std::copy(x.begin(), x.end(), wide.begin());
  TensorView xv{ir::DType::Float, {static_cast<int64_t>(kN)}, wide.data(), kN * sizeof(float)};
  TensorView yv{ir::DType::Float, {static_cast<int64_t>(kN)}, wide.data() + kN / 4, kN * sizeof(float)};
  program->run(std::span(&xv, 1), std::span(&yv, 1));
  EXPECT_FALSE(program->inPlace(ir::Direction::In, 0));
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(wide[kN / 4 + i], std::max(x[i], 0.0f)) << i;
}

// A plan whose own activations outweigh the bytes a rebinding saves is not duplicated.
TEST(KernelsMemoryPlan, NoReboundPlanWhenItCostsMoreThanTheCopies) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {16})
      .op("a", "relu", {{"src", "x"}}, {{"dst", "t"}})
      .op("wide", "tile", {{"src", "t"}}, {{"dst", "u"}}, {{"repeats", {4096}}})
      .op("sum", "reduce", {{"src", "u"}}, {{"dst", "y"}}, {{"reduce_op", "sum"}, {"axes", {0}}, {"keepdims", true}})
      .output("y", "TL_FLOAT", {1});
  std::vector<float> boundIn(16);
  BuildOptions options;
  options.inputMemory = {{boundIn.data(), sizeof(float) * 16}};
  options.reboundPlans = 4;
  auto program = HostProgram::build(g.graph(), nullptr, options);
  ASSERT_GT(program->activationBytes(), 16 * sizeof(float));
  std::vector<float> in(16, 1.0f), out(1);
  TensorView x{ir::DType::Float, {16}, in.data(), sizeof(float) * 16};
  TensorView y{ir::DType::Float, {1}, out.data(), sizeof(float)};
  program->run(std::span(&x, 1), std::span(&y, 1));
  EXPECT_FALSE(program->inPlace(ir::Direction::In, 0));
  EXPECT_EQ(out[0], 16.0f * 4096.0f);
}

}  // namespace
}  // namespace qaic::kernels::test
