// SPDX-License-Identifier: Apache-2.0
// cast-placement: a float16 retained cache is updated in its own type by a scatter of the io
// buffer itself (what lets the emulator update it in place), and the widening that remains runs
// after the data movement.
#include <gtest/gtest.h>

#include <algorithm>

#include "CastPlacement.hpp"
#include "ConstantPacker.hpp"
#include "CustomIo.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

// A one-head attention read of a KV cache in efficient-transformers' form: the row `k` is
// scattered into cache [4, 3] at `index`, the updated cache is both the retained output and,
// transposed, the right side of q's scores.
ir::Graph cacheGraph() {
  return testing::inferredGraph(R"({"io": [
      {"name": "q", "tensor": "q", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 3]},
      {"name": "k", "tensor": "k", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 3]},
      {"name": "index", "tensor": "index", "direction": "in", "dtype": "TL_INT64", "dims": [1, 1]},
      {"name": "cache", "tensor": "cache", "direction": "in", "dtype": "TL_FLOAT", "dims": [4, 3]},
      {"name": "scores", "tensor": "scores", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 4]},
      {"name": "cache_RetainedState", "tensor": "updated", "direction": "out", "dtype": "TL_FLOAT",
       "dims": [4, 3]}],
    "ops": [
      {"name": "update", "optype": "scatter_nd",
       "tensors_in": [{"arg_name": "src", "name": "cache"}, {"arg_name": "indices", "name": "index"},
                      {"arg_name": "updates", "name": "k"}],
       "tensors_out": [{"arg_name": "dst", "name": "updated"}],
       "params": [{"arg_name": "reduction", "value": "none"}]},
      {"name": "flip", "optype": "transpose", "tensors_in": [{"arg_name": "src", "name": "updated"}],
       "tensors_out": [{"arg_name": "dst", "name": "keys"}], "params": [{"arg_name": "axes", "value": [1, 0]}]},
      {"name": "score", "optype": "matmul",
       "tensors_in": [{"arg_name": "src1", "name": "q"}, {"arg_name": "src2", "name": "keys"}],
       "tensors_out": [{"arg_name": "dst", "name": "scores"}], "params": []}]})");
}

const ir::Op& opOf(const ir::Graph& graph, std::string_view optype) {
  const auto it = std::find_if(graph.ops.begin(), graph.ops.end(),
                               [&](const ir::Op& op) { return op.optype == optype; });
  if (it == graph.ops.end()) throw std::runtime_error("no " + std::string(optype));
  return *it;
}

std::size_t countOf(const ir::Graph& graph, std::string_view optype) {
  return static_cast<std::size_t>(
      std::count_if(graph.ops.begin(), graph.ops.end(), [&](const ir::Op& op) { return op.optype == optype; }));
}

ir::Graph float16CacheGraph() {
  ir::Graph graph = cacheGraph();
  applyCustomIo(graph, {{"cache", ir::DType::Float16, 1}, {"cache_RetainedState", ir::DType::Float16, 2}}, "io.yaml");
  return graph;
}

TEST(CastPlacement, AFloat16CacheIsScatteredInItsOwnTypeWhereItLives) {
  ir::Graph graph = float16CacheGraph();
  ASSERT_EQ(countOf(graph, "cast"), 2u);  // the whole cache widened before and narrowed after
  EXPECT_EQ(keepRetainedInBufferPrecision(graph, findRetainedPairs(graph)), 1);
  const ir::Op& scatter = opOf(graph, "scatter_nd");
  EXPECT_EQ(scatter.findInput("src")->name, graph.io[3].tensor);    // the float16 input buffer
  EXPECT_EQ(scatter.outputs[0].name, graph.io[5].tensor);           // the float16 retained output
  const std::string& updates = scatter.findInput("updates")->name;  // k rounded first
  EXPECT_EQ(graph.tensors.at(updates).dtype, ir::DType::Float16);
  EXPECT_EQ(graph.tensors.at(updates).dims, (ir::Dims{1, 3}));
  // The scores still read a float cache: one cast rounds the row, one widens the cache.
  EXPECT_EQ(countOf(graph, "cast"), 2u);
  EXPECT_EQ(graph.tensors.at("updated").dtype, ir::DType::Float);
  EXPECT_EQ(graph.tensors.at("scores").dtype, ir::DType::Float);
}

TEST(CastPlacement, TheWideningMovesBelowTheTranspose) {
  ir::Graph graph = float16CacheGraph();
  keepRetainedInBufferPrecision(graph, findRetainedPairs(graph));
  EXPECT_EQ(sinkWideningCasts(graph), 1);
  const ir::Op& flip = opOf(graph, "transpose");
  EXPECT_EQ(flip.inputs[0].name, graph.io[5].tensor);  // the updated float16 cache itself
  EXPECT_EQ(graph.tensors.at(flip.outputs[0].name).dtype, ir::DType::Float16);
  EXPECT_EQ(graph.tensors.at("keys").dtype, ir::DType::Float);  // what the matmul reads
  EXPECT_EQ(graph.tensors.at("keys").dims, (ir::Dims{3, 4}));
  EXPECT_EQ(sinkWideningCasts(graph), 0);  // a matmul is no data movement
}

TEST(CastPlacement, ACacheOfTheGraphsOwnTypeOrAnotherUpdateIsLeftAlone) {
  ir::Graph plain = cacheGraph();
  const std::string before = ir::toJson(plain);
  EXPECT_EQ(keepRetainedInBufferPrecision(plain, findRetainedPairs(plain)), 0);
  EXPECT_EQ(ir::toJson(plain), before);
  // An accumulating scatter would add in float16: its pair keeps the float update.
  ir::Graph adding = float16CacheGraph();
  for (ir::Op& op : adding.ops)
    if (op.optype == "scatter_nd") op.params = {{"reduction", std::string("add")}};
  const std::string added = ir::toJson(adding);
  EXPECT_EQ(keepRetainedInBufferPrecision(adding, findRetainedPairs(adding)), 0);
  EXPECT_EQ(ir::toJson(adding), added);
}

TEST(CastPlacement, TheScoresReadTheFloat16CacheWhereItLiesTransposedInTheProduct) {
  ir::Graph graph = float16CacheGraph();
  keepRetainedInBufferPrecision(graph, findRetainedPairs(graph));
  sinkWideningCasts(graph);
  EXPECT_EQ(readNarrowMatmulOperands(graph), 1);
  const ir::Op& score = opOf(graph, "matmul_trans_b");
  EXPECT_EQ(score.findInput("src2")->name, graph.io[5].tensor);  // the updated float16 cache itself
  EXPECT_EQ(countOf(graph, "transpose"), 0u);
  EXPECT_EQ(countOf(graph, "matmul"), 0u);
  EXPECT_EQ(countOf(graph, "cast"), 1u);  // only k's rounding is left
  EXPECT_EQ(graph.tensors.at("scores").dtype, ir::DType::Float);
  EXPECT_EQ(graph.tensors.at("scores").dims, (ir::Dims{1, 4}));
  EXPECT_EQ(readNarrowMatmulOperands(graph), 0);
}

// q [1, 3] times the widened float16 `c` [3, 4]; `extra` adds a reader of the widened value, or
// makes `c` a constant.
ir::Graph widenedOperandGraph(std::string_view extra) {
  const std::string source =
      extra == "constant"
          ? R"({"name": "table", "optype": "create", "tensors_in": [], "tensors_out": [{"arg_name": "dst", "name": "c"}],
               "params": [{"arg_name": "dtype", "value": "TL_FLOAT16"}, {"arg_name": "dims", "value": [3, 4]},
                          {"arg_name": "data", "value": [0]}, {"arg_name": "ran", "value": [0, 0]},
                          {"arg_name": "from_file", "value": true}]},)"
          : R"({"name": "copy", "optype": "reshape", "tensors_in": [{"arg_name": "src", "name": "cin"}],
               "tensors_out": [{"arg_name": "dst", "name": "c"}], "params": [{"arg_name": "dims", "value": [3, 4]}]},)";
  const std::string reader =
      extra == "second reader"
          ? R"(, {"name": "other", "optype": "unary", "tensors_in": [{"arg_name": "src", "name": "cw"}],
                "tensors_out": [{"arg_name": "dst", "name": "o"}],
                "params": [{"arg_name": "func", "value": "neg"}, {"arg_name": "alpha", "value": 0},
                           {"arg_name": "beta", "value": 0}]})"
          : "";
  const std::string readerIo =
      extra == "second reader"
          ? R"(, {"name": "o", "tensor": "o", "direction": "out", "dtype": "TL_FLOAT", "dims": [3, 4]})"
          : "";
  return testing::inferredGraph(R"({"io": [
      {"name": "q", "tensor": "q", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 3]},
      {"name": "cin", "tensor": "cin", "direction": "in", "dtype": "TL_FLOAT16", "dims": [12]},
      {"name": "s", "tensor": "s", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 4]})" +
                                readerIo + R"(],
    "ops": [)" + source + R"(
      {"name": "widen", "optype": "cast", "tensors_in": [{"arg_name": "src", "name": "c"}],
       "tensors_out": [{"arg_name": "dst", "name": "cw"}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}]},
      {"name": "score", "optype": "matmul",
       "tensors_in": [{"arg_name": "src1", "name": "q"}, {"arg_name": "src2", "name": "cw"}],
       "tensors_out": [{"arg_name": "dst", "name": "s"}], "params": []})" +
                                reader + "]}");
}

TEST(CastPlacement, AMatmulReadsAFloat16OperandWithoutItsWidenedCopy) {
  ir::Graph graph = widenedOperandGraph("");
  EXPECT_EQ(readNarrowMatmulOperands(graph), 1);
  EXPECT_EQ(opOf(graph, "matmul").findInput("src2")->name, "c");  // not transposed: still a matmul
  EXPECT_EQ(countOf(graph, "cast"), 0u);
  EXPECT_EQ(graph.tensors.at("s").dtype, ir::DType::Float);
}

TEST(CastPlacement, AWidenedValueReadElsewhereOrAConstantOperandIsLeftAlone) {
  for (const std::string_view extra : {"second reader", "constant"}) {
    ir::Graph graph = widenedOperandGraph(extra);
    const std::string before = ir::toJson(graph);
    EXPECT_EQ(readNarrowMatmulOperands(graph), 0) << extra;
    EXPECT_EQ(ir::toJson(graph), before) << extra;
  }
}

// efficient-transformers' attention read of a float16 cache [1, 2, 8, 4]: the positions gathered
// (CtxGather: gather_nd, batch_dims 2), the keys transposed and widened for the scores, the values
// widened for the weighted sum. Both products end up reading the cache itself.
TEST(CastPlacement, AttentionReadsTheGatheredCachePositionsWhereTheyLie) {
  ir::Graph graph = testing::inferredGraph(R"({"io": [
      {"name": "q", "tensor": "q", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 2, 1, 4]},
      {"name": "p", "tensor": "p", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 2, 1, 6]},
      {"name": "cache", "tensor": "cache", "direction": "in", "dtype": "TL_FLOAT16", "dims": [1, 2, 8, 4]},
      {"name": "idx", "tensor": "idx", "direction": "in", "dtype": "TL_INT64", "dims": [1, 2, 6, 1]},
      {"name": "scores", "tensor": "scores", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 2, 1, 6]},
      {"name": "mixed", "tensor": "mixed", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 2, 1, 4]}],
    "ops": [
      {"name": "gather_k", "optype": "gather_nd", "tensors_in": [{"arg_name": "src", "name": "cache"},
       {"arg_name": "indices", "name": "idx"}], "tensors_out": [{"arg_name": "dst", "name": "k"}],
       "params": [{"arg_name": "batch_dims", "value": 2}]},
      {"name": "gather_v", "optype": "gather_nd", "tensors_in": [{"arg_name": "src", "name": "cache"},
       {"arg_name": "indices", "name": "idx"}], "tensors_out": [{"arg_name": "dst", "name": "v"}],
       "params": [{"arg_name": "batch_dims", "value": 2}]},
      {"name": "flip", "optype": "transpose", "tensors_in": [{"arg_name": "src", "name": "k"}],
       "tensors_out": [{"arg_name": "dst", "name": "kt"}], "params": [{"arg_name": "axes", "value": [0, 1, 3, 2]}]},
      {"name": "widen_k", "optype": "cast", "tensors_in": [{"arg_name": "src", "name": "kt"}],
       "tensors_out": [{"arg_name": "dst", "name": "ktw"}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}]},
      {"name": "widen_v", "optype": "cast", "tensors_in": [{"arg_name": "src", "name": "v"}],
       "tensors_out": [{"arg_name": "dst", "name": "vw"}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}]},
      {"name": "score", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": "q"},
       {"arg_name": "src2", "name": "ktw"}], "tensors_out": [{"arg_name": "dst", "name": "scores"}], "params": []},
      {"name": "mix", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": "p"},
       {"arg_name": "src2", "name": "vw"}], "tensors_out": [{"arg_name": "dst", "name": "mixed"}], "params": []}]})");
  EXPECT_EQ(readNarrowMatmulOperands(graph), 4);  // two casts, then two gathers
  ASSERT_EQ(graph.ops.size(), 2u) << ir::toJson(graph);
  for (const ir::Op& op : graph.ops) {
    EXPECT_EQ(op.optype, "matmul_gathered_b");
    EXPECT_EQ(op.findInput("src2")->name, "cache");
    EXPECT_EQ(op.findInput("indices")->name, "idx");
    EXPECT_EQ(op.boolean("trans_b"), op.name == "score") << op.name;
  }
  EXPECT_EQ(graph.tensors.at("scores").dims, (ir::Dims{1, 2, 1, 6}));
  EXPECT_EQ(graph.tensors.at("mixed").dims, (ir::Dims{1, 2, 1, 4}));
}

TEST(CastPlacementPass, OnlyWithConvertToFp16AndRetainedState) {
  for (const bool fp16 : {false, true}) {
    ExecOptions options;
    options.retainedState = true;
    options.convertToFp16 = fp16;
    Compilation compilation(options);
    compilation.variants.push_back(testing::loadedModel(float16CacheGraph()));
    castPlacementPass(compilation);
    const ir::Graph& graph = compilation.variants[0].graph;
    EXPECT_EQ(opOf(graph, "scatter_nd").findInput("src")->name == graph.io[3].tensor, fp16) << fp16;
  }
}

}  // namespace
}  // namespace qaic::compiler

namespace qaic::compiler {
namespace {

// An embedding: rows of the constant table [5, 2] gathered by the io `ids`.
ir::Graph embeddingGraph() {
  return testing::inferredGraph(R"({"io": [
      {"name": "ids", "tensor": "ids", "direction": "in", "dtype": "TL_INT64", "dims": [3]},
      {"name": "rows", "tensor": "rows", "direction": "out", "dtype": "TL_FLOAT", "dims": [3, 2]}],
    "ops": [
      {"name": "table", "optype": "create", "tensors_in": [], "tensors_out": [{"arg_name": "dst", "name": "t"}],
       "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": [5, 2]},
                  {"arg_name": "data", "value": [0]}, {"arg_name": "ran", "value": [0, 0]},
                  {"arg_name": "from_file", "value": true}]},
      {"name": "lookup", "optype": "gather",
       "tensors_in": [{"arg_name": "src", "name": "t"}, {"arg_name": "indices", "name": "ids"}],
       "tensors_out": [{"arg_name": "dst", "name": "rows"}], "params": [{"arg_name": "axis", "value": 0}]}]})");
}

TEST(CastPlacement, ATableOnlyGatheredFromStaysFloat16AndOnlyItsRowsAreWidened) {
  ir::Graph graph = embeddingGraph();
  EXPECT_EQ(keepSelectedConstantsNarrow(graph), 1);
  EXPECT_EQ(graph.tensors.at("t").dtype, ir::DType::Float16);  // the constant keeps its name
  EXPECT_EQ(sinkWideningCasts(graph), 1);
  ASSERT_EQ(graph.ops.size(), 3u);
  EXPECT_EQ(graph.ops[1].optype, "gather");
  EXPECT_EQ(graph.ops[1].inputs[0].name, "t");
  EXPECT_EQ(graph.tensors.at(graph.ops[1].outputs[0].name).dims, (ir::Dims{3, 2}));
  EXPECT_EQ(graph.ops[2].optype, "cast");
  EXPECT_EQ(graph.ops[2].outputs[0].name, "rows");
  EXPECT_EQ(graph.tensors.at("rows").dtype, ir::DType::Float);
}

TEST(CastPlacement, ATableAComputationReadsStaysFloat) {
  ir::Graph graph = embeddingGraph();
  ir::Op relu;
  relu.name = "act";
  relu.optype = "relu";
  relu.inputs = {{"src", "t"}};
  relu.outputs = {{"dst", "u"}};
  graph.ops.push_back(relu);
  ir::inferShapes(graph);
  EXPECT_EQ(keepSelectedConstantsNarrow(graph), 0);
  EXPECT_EQ(graph.tensors.at("t").dtype, ir::DType::Float);
}

TEST(CastPlacementPass, ANarrowedTableIsPackedAsFloat16FromFloatData) {
  ExecOptions options;
  options.convertToFp16 = true;
  Compilation compilation(options);
  compilation.variants.push_back(testing::loadedModel(embeddingGraph()));
  auto values = std::make_shared<std::vector<float>>(10, 1.5f);
  compilation.variants[0].weights = {{"t", ir::DType::Float, {5, 2}, std::as_bytes(std::span(*values))}};
  compilation.variants[0].owner = values;
  castPlacementPass(compilation);
  const PackedConstants packed = packConstants(compilation.variants[0].graph, compilation.variants[0].weights, true,
                                               false);
  ASSERT_EQ(packed.constants.size(), 1u);
  EXPECT_EQ(packed.constants[0].tensor.dtype, ir::DType::Float16);
  EXPECT_EQ(packed.constants[0].tensor.dims, (ir::Dims{5, 2}));
}

}  // namespace
}  // namespace qaic::compiler
