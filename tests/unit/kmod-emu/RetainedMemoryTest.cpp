// SPDX-License-Identifier: Apache-2.0
// RetainedMemory (design cut 7): an activation's retained state is zeros from activation on,
// is read by each run as its pair's input and becomes the pair's output only when the run
// commits; a scatter of the input that nothing reads afterwards updates it in place.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "RetainedMemory.hpp"

namespace qaic::emu {
namespace {

container::QpcRetainedState pair(const std::string& name, uint64_t floats) {
  container::QpcRetainedState entry;
  entry.name = name;
  entry.stateName = name + "_RetainedState";
  entry.tensor = name + "_in";
  entry.stateTensor = name + "_out";
  entry.dtype = ir::DType::Float;
  entry.dims = {static_cast<int64_t>(floats)};
  entry.size = floats * sizeof(float);
  return entry;
}

ir::Op op(const std::string& optype, std::vector<ir::TensorArg> inputs, const std::string& output) {
  ir::Op result;
  result.name = optype + "_" + output;
  result.optype = optype;
  result.inputs = std::move(inputs);
  result.outputs = {{"dst", output}};
  return result;
}

// cache_out = scatter_elements(src: cache_in, indices, updates), as a KV cache update.
ir::Graph scatterUpdate(const std::string& optype = "scatter_elements") {
  ir::Graph graph;
  graph.ops.push_back(
      op(optype, {{"src", "cache_in"}, {"indices", "positions"}, {"updates", "new_values"}}, "cache_out"));
  return graph;
}

std::vector<float> floatsOf(const kernels::IoMemory& memory) {
  std::vector<float> values(memory.bytes / sizeof(float));
  std::memcpy(values.data(), memory.data, memory.bytes);
  return values;
}

void fill(const kernels::IoMemory& memory, float value) {
  auto* floats = static_cast<float*>(memory.data);
  for (std::size_t i = 0; i < memory.bytes / sizeof(float); ++i) floats[i] = value;
}

TEST(RetainedMemory, StartsAsZerosOfEachPairsSizeAndFindsItByEitherBufferName) {
  RetainedMemory memory({pair("past_key.0", 6), pair("past_value.0", 3)});
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory.inputMemory(0).bytes, 0u) << "memory taken before the device charged it";
  memory.allocate();
  EXPECT_EQ(memory.find("past_key.0"), 0);
  EXPECT_EQ(memory.find("past_value.0_RetainedState"), 1);
  EXPECT_EQ(memory.find("logits"), -1);
  EXPECT_EQ(memory.inputMemory(0).bytes, 6 * sizeof(float));
  EXPECT_EQ(floatsOf(memory.inputMemory(0)), std::vector<float>(6, 0.0f));
  EXPECT_EQ(floatsOf(memory.inputMemory(1)), std::vector<float>(3, 0.0f));
}

TEST(RetainedMemory, OutputWrittenElsewhereBecomesTheStateOnlyWhenTheRunCommits) {
  RetainedMemory memory({pair("state", 4)});
  memory.allocate();
  ir::Graph graph;  // state_out = add(state_in, step): not a scatter, so not in place
  graph.ops.push_back(op("add", {{"src1", "state_in"}, {"src2", "step"}}, "state_out"));

  const bool inPlace = memory.prepare(0, graph);
  ASSERT_FALSE(inPlace);
  const kernels::IoMemory output = memory.outputMemory(0, inPlace);
  EXPECT_NE(output.data, memory.inputMemory(0).data);
  fill(output, 2.5f);
  EXPECT_EQ(floatsOf(memory.inputMemory(0)), std::vector<float>(4, 0.0f)) << "before the commit";

  memory.commit({inPlace});
  EXPECT_EQ(floatsOf(memory.inputMemory(0)), std::vector<float>(4, 2.5f));
}

TEST(RetainedMemory, ScatterOfTheInputUpdatesTheStateInPlace) {
  RetainedMemory memory({pair("cache", 4)});
  memory.allocate();
  for (const char* optype : {"scatter_elements", "scatter_nd"}) {
    const bool inPlace = memory.prepare(0, scatterUpdate(optype));
    ASSERT_TRUE(inPlace) << optype;
    EXPECT_EQ(memory.outputMemory(0, inPlace).data, memory.inputMemory(0).data) << optype;
  }
  fill(memory.outputMemory(0, true), 7.0f);
  memory.commit({true});
  EXPECT_EQ(floatsOf(memory.inputMemory(0)), std::vector<float>(4, 7.0f));
}

TEST(RetainedMemory, ResetGivesZerosAsAtActivation) {
  RetainedMemory memory({pair("cache", 5)});
  memory.allocate();
  fill(memory.inputMemory(0), 3.0f);
  memory.reset();
  EXPECT_EQ(floatsOf(memory.inputMemory(0)), std::vector<float>(5, 0.0f));
}

TEST(RetainedMemoryUpdatesInPlace, OnlyWhenNothingReadsTheInputOrAViewOfItAfterTheScatter) {
  EXPECT_TRUE(updatesInPlace(scatterUpdate(), "cache_in", "cache_out"));
  EXPECT_FALSE(updatesInPlace(scatterUpdate(), "cache_in", "cache_in")) << "the same tensor";
  EXPECT_FALSE(updatesInPlace(scatterUpdate(), "other_in", "cache_out")) << "scatter of another";

  ir::Graph readAfter = scatterUpdate();
  readAfter.ops.push_back(op("reshape", {{"src", "cache_in"}}, "cache_view"));
  readAfter.ops.push_back(op("add", {{"src1", "cache_view"}, {"src2", "cache_out"}}, "sum"));
  EXPECT_FALSE(updatesInPlace(readAfter, "cache_in", "cache_out")) << "a view read after it";

  ir::Graph indexedBySelf;  // the scatter's updates are the input itself
  indexedBySelf.ops.push_back(
      op("scatter_elements", {{"src", "cache_in"}, {"indices", "positions"}, {"updates", "cache_in"}}, "cache_out"));
  EXPECT_FALSE(updatesInPlace(indexedBySelf, "cache_in", "cache_out"));

  ir::Graph notAScatter;
  notAScatter.ops.push_back(op("relu", {{"src", "cache_in"}}, "cache_out"));
  EXPECT_FALSE(updatesInPlace(notAScatter, "cache_in", "cache_out"));
}

}  // namespace
}  // namespace qaic::emu
