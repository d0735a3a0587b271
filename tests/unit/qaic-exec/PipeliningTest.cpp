// SPDX-License-Identifier: Apache-2.0
// Pipeline stages (partition/Pipelining) of a network with retained state: a one-layer decoder
// whose cache `past` is updated (past_RetainedState) and read back. The pair stays on one stage
// (a balanced cut moves out of the cache's span, node lists that split it are refused), and a
// stage fed only by the previous one still maps the input that selects the specialization.
#include <gmock/gmock.h>

#include <algorithm>

#include "CompileError.hpp"
#include "GraphBuilder.hpp"
#include "partition/Pipelining.hpp"

namespace qaic::compiler::partition {
namespace {

using kernels::test::GraphBuilder;
using ::testing::HasSubstr;

std::vector<double> ramp(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.01 * double(i % 13);
  return v;
}

// x [2, 8] -> h1 = x @ w1; the cache past [4, 8] gets the mean of h1's rows and of itself added
// (past_RetainedState), k = updated @ wk, att = h1 @ k^T, y = att @ w2. The weights make a
// balanced two-stage cut fall at k, inside the cache's span (pr .. k).
ir::Graph decoderLayer() {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {2, 8}).input("past", "TL_FLOAT", {4, 8});
  g.create("w1", "TL_FLOAT", {8, 8}, ramp(64))
      .create("wk", "TL_FLOAT", {8, 8}, ramp(64))
      .create("w2", "TL_FLOAT", {4, 8}, ramp(32))
      .op("h1", "matmul", {{"src1", "x"}, {"src2", "w1"}}, {{"dst", "h"}})
      .op("pr", "reduce", {{"src", "past"}}, {{"dst", "past_mean"}},
          {{"reduce_op", "mean"}, {"axes", {0}}, {"keepdims", true}})
      .op("row", "reduce", {{"src", "h"}}, {{"dst", "h_mean"}},
          {{"reduce_op", "mean"}, {"axes", {0}}, {"keepdims", true}})
      .op("mix", "elew", {{"src1", "h_mean"}, {"src2", "past_mean"}}, {{"dst", "update"}}, {{"elew_op", "TL_SUM"}})
      .op("upd", "elew_bcast", {{"src1", "past"}, {"src2", "update"}}, {{"dst", "past_RetainedState"}},
          {{"elew_op", "TL_SUM"}})
      .op("k", "matmul", {{"src1", "past_RetainedState"}, {"src2", "wk"}}, {{"dst", "keys"}})
      .op("kt", "transpose", {{"src", "keys"}}, {{"dst", "keys_t"}}, {{"axes", {1, 0}}})
      .op("att", "matmul", {{"src1", "h"}, {"src2", "keys_t"}}, {{"dst", "scores"}})
      .op("y", "matmul", {{"src1", "scores"}, {"src2", "w2"}}, {{"dst", "out"}})
      .output("out", "TL_FLOAT", {2, 8})
      .output("past_RetainedState", "TL_FLOAT", {4, 8});
  return g.graph();
}

const std::set<std::string> kRetained = {"past", "past_RetainedState"};

int stageOfOp(const ir::Graph& g, const StageAssignment& stages, const std::string& name) {
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].name == name) return stages[i];
  return -3;
}

bool maps(const ir::Graph& part, const std::string& buffer) {
  return std::any_of(part.io.begin(), part.io.end(), [&](const ir::IoBuffer& io) { return io.bufferName == buffer; });
}

TEST(Pipelining, ABalancedCutLeavesTheCacheOnOneStage) {
  const ir::Graph g = decoderLayer();
  // Weights alone would cut at k, sending the updated cache to the next stage.
  const StageAssignment plain = balanceStages(g, 2);
  EXPECT_EQ(stageOfOp(g, plain, "upd"), 0);
  EXPECT_EQ(stageOfOp(g, plain, "k"), 1);
  const StageAssignment stages = balanceStages(g, 2, kRetained);
  for (const char* op : {"pr", "upd", "k"}) EXPECT_EQ(stageOfOp(g, stages, op), 0) << op;
  EXPECT_EQ(stageOfOp(g, stages, "y"), 1);

  const StagedNetwork net = splitStages(g, stages, 2, kRetained);
  // Part 1 is stage 0: the pair is its io, and only its; part 0 (the last stage) keeps the rest.
  EXPECT_TRUE(maps(net.parts[1], "past") && maps(net.parts[1], "past_RetainedState"));
  EXPECT_FALSE(maps(net.parts[0], "past") || maps(net.parts[0], "past_RetainedState"));
  EXPECT_TRUE(maps(net.parts[0], "out"));
  for (const StageTransfer& t : net.transfers) EXPECT_NE(t.tensor, "past_RetainedState") << net.report();
}

TEST(Pipelining, NodeListsThatReadTheCacheInAnotherStageThanItsUpdateAreRefused) {
  const ir::Graph g = decoderLayer();
  const StageAssignment stages = stagesFromNodeLists(g, {{"h1", "pr", "row", "mix"}, {"upd", "k", "kt", "att", "y"}},
                                                     "mdp.json");
  try {
    splitStages(g, stages, 2, kRetained);
    FAIL() << "a cache read on stage 0 and updated on stage 1 was split";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'pr' in stage 0 reads retained state 'past', whose 'past_RetainedState' "
                                    "stage 1 computes"));
  }
}

TEST(Pipelining, AStageFedOnlyByThePreviousOneMapsTheInputsThatSelectTheSpecialization) {
  const ir::Graph g = decoderLayer();
  // Stage 1 (part 2 of 3) runs kt and att: it reads no input, only what stage 0 sends.
  StageAssignment stages = stagesFromNodeLists(g, {{"h1", "pr", "row", "mix", "upd", "k"}, {"kt", "att"}, {"y"}},
                                               "mdp.json");
  EXPECT_TRUE(splitStages(g, stages, 3, kRetained).parts[2].io.empty());
  const StagedNetwork net = splitStages(g, stages, 3, kRetained, {"x"});
  ASSERT_EQ(net.parts[2].io.size(), 1u);
  EXPECT_EQ(net.parts[2].io[0].bufferName, "x");
}

}  // namespace
}  // namespace qaic::compiler::partition
