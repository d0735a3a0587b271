// SPDX-License-Identifier: Apache-2.0
// Tensor slicing (partition/TensorSlicing): an MLP, a self-attention block that writes a
// retained KV cache with scatter_nd, a transformer layer with rotary embeddings and
// convolutional blocks (ResNet's, MobileNet's with squeeze-excitation, ConvNeXt's), each split
// over 2 and 4 parts that run on threads through PeerRendezvous, equal the unsplit network
// within float tolerance; the collectives, the split caches and the report say how.
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "CastPlacement.hpp"
#include "CustomIo.hpp"
#include "PartRunner.hpp"
#include "SlicingTestNetworks.hpp"
#include "partition/TensorSlicing.hpp"
#include "qaic/Float16.hpp"

namespace qaic::compiler::partition {
namespace {

using namespace slicing_test;

using kernels::test::GraphBuilder;
using kernels::test::HostTensor;
using kernels::test::randomFloats;
using ::testing::HasSubstr;

int count(const ir::Graph& g, const std::string& optype) {
  return static_cast<int>(
      std::count_if(g.ops.begin(), g.ops.end(), [&](const ir::Op& op) { return op.optype == optype; }));
}

void expectClose(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance = 1e-4f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0f, std::fabs(expected[i]))) << "element " << i;
  }
}

// Runs the split network's parts on threads with `inputs` (each part the same, except the
// per-part inputs `perPart` returns) and returns each part's outputs.
kernels::test::PartResults runSplit(const SlicedNetwork& net, const Weights& weights,
                                    const std::vector<HostTensor>& inputs,
                                    const std::function<std::vector<HostTensor>(std::size_t)>& perPart = nullptr) {
  std::vector<std::vector<HostTensor>> partInputs;
  for (std::size_t p = 0; p < net.parts.size(); ++p) partInputs.push_back(perPart ? perPart(p) : inputs);
  const WeightLookup unsplit = weights.lookup();
  return kernels::test::runParts(net.parts, partInputs, [&](std::size_t p) -> kernels::ConstantLookup {
    return [&net, unsplit, p](std::string_view name) { return net.findWeight(p, name, unsplit); };
  });
}

// ---- the networks ----------------------------------------------------------------------------

std::vector<float> run(const ir::Graph& graph, const Weights& w, const std::vector<HostTensor>& inputs,
                       std::size_t output = 0) {
  return kernels::test::runGraph(graph, inputs, w.lookup())[output].values<float>();
}

HostTensor floats(const ir::Dims& dims, uint32_t seed) {
  return HostTensor::of(ir::DType::Float, dims, randomFloats(static_cast<std::size_t>(ir::elementCount(dims)), seed));
}

// Every part of `net` gives the unsplit graph's first output for `inputs`.
void expectPartsMatch(const ir::Graph& graph, const Weights& w, const SlicedNetwork& net,
                      const std::vector<HostTensor>& inputs) {
  const auto expected = run(graph, w, inputs);
  const auto results = runSplit(net, w, inputs);
  for (std::size_t p = 0; p < net.parts.size(); ++p) expectClose(results.outputs[p][0].values<float>(), expected);
}

// attentionWithCache's inputs: x, the (batch, head, position) tuples writing the three new rows
// at positions 2, 3, 4 of every head, the causal mask, and the two caches in `cacheType`.
std::vector<HostTensor> attentionInputs(ir::DType cacheType) {
  std::vector<int64_t> tuples;
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t s = 0; s < kSeq; ++s) tuples.insert(tuples.end(), {0, h, 2 + s});
  }
  std::vector<float> mask(kSeq * kContext);
  for (int64_t s = 0; s < kSeq; ++s) {
    for (int64_t c = 0; c < kContext; ++c) mask[static_cast<std::size_t>(s * kContext + c)] = c <= 2 + s ? 0.0f : -1e4f;
  }
  const ir::Dims cacheDims{1, kHeads, kContext, kHeadDim};
  auto cache = [&](uint32_t seed) {
    HostTensor t = floats(cacheDims, seed);
    if (cacheType != ir::DType::Float16) return t;
    std::vector<uint16_t> halves;
    for (float v : t.values<float>()) halves.push_back(rt::floatToHalf(v));
    return HostTensor::of(ir::DType::Float16, cacheDims, halves);
  };
  return {floats({1, kSeq, kHeads * kHeadDim}, 40), HostTensor::of(ir::DType::Int64, {1, kHeads, kSeq, 3}, tuples),
          HostTensor::of(ir::DType::Float, {1, 1, kSeq, kContext}, mask), cache(41), cache(42)};
}

// Part p's heads of a cache [1, H, C, D], as its card keeps them.
HostTensor headsOf(const HostTensor& cache, std::size_t p, std::size_t parts) {
  const std::size_t share = cache.bytes.size() / parts;
  HostTensor slice{cache.dtype, {1, kHeads / static_cast<int64_t>(parts), kContext, kHeadDim}, {}};
  slice.bytes.assign(cache.bytes.begin() + static_cast<std::ptrdiff_t>(p * share),
                     cache.bytes.begin() + static_cast<std::ptrdiff_t>((p + 1) * share));
  return slice;
}

// ---- the tests -------------------------------------------------------------------------------

class TensorSlicing : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Parts, TensorSlicing, ::testing::Values(2u, 4u));

TEST_P(TensorSlicing, MlpIsAColumnThenARowSplitWithOneSum) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = mlp(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  ASSERT_EQ(net.parts.size(), parts);
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
  }
  EXPECT_THAT(net.report.text(), HasSubstr("matmul 'up_mm': column split of weight 'up' [16,64] -> [16," +
                                           std::to_string(kInner / int64_t(parts)) + "] per part"));
  EXPECT_THAT(net.report.text(), HasSubstr("matmul 'down_mm': row split of weight 'down'"));
  // Each part holds its share of the two large weights and its bias slice, and the whole
  // second bias (added after the sum).
  const uint64_t split = (2 * kHidden * kInner + kInner) * sizeof(float);
  for (uint64_t bytes : net.report.weightBytes) EXPECT_EQ(bytes, split / parts + kHidden * sizeof(float));
  ASSERT_EQ(net.report.collectives.size(), 1u);
  EXPECT_EQ(net.report.collectives[0].bytes, uint64_t(kRows * kHidden * sizeof(float)));
  EXPECT_EQ(net.report.collectiveBytes(), uint64_t(kRows * kHidden * sizeof(float)));

  const std::vector<HostTensor> inputs{floats({kRows, kHidden}, 5)};
  expectPartsMatch(graph, w, net, inputs);
}

// A model with prefill and decode specializations splits each graph: the second split, like the
// walk that finds the caches' splits, takes the slices the first cut. A row split (the down
// projection and the biases) is a view of the weight's own bytes; only the column split of `up`
// is copied, once.
TEST_P(TensorSlicing, SpecializationsShareTheSlicesAndARowSplitIsAView) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = mlp(w);
  const auto slices = std::make_shared<WeightSlices>();
  const SlicedNetwork prefill = sliceTensors(graph, parts, w.lookup(), {}, slices);
  const SlicedNetwork decode = sliceTensors(graph, parts, w.lookup(), {}, slices);
  EXPECT_EQ(slices->copiedBytes(), uint64_t(kHidden * kInner * sizeof(float)));
  const auto slice = [&](const SlicedNetwork& net, std::size_t p, const std::string& weight) {
    const std::string name = weight + ".part" + std::to_string(p) + "of" + std::to_string(parts);
    const ir::WeightTensor* found = net.findWeight(p, name, nullptr);
    EXPECT_NE(found, nullptr) << name;
    return found ? found->data : std::span<const std::byte>();
  };
  const std::span<const std::byte> down = w.lookup()("down")->data;
  for (std::size_t p = 0; p < parts; ++p) {
    EXPECT_EQ(slice(prefill, p, "up").data(), slice(decode, p, "up").data()) << "part " << p;
    EXPECT_EQ(slice(prefill, p, "down").data(), down.data() + p * down.size() / parts) << "part " << p;
    EXPECT_EQ(slice(decode, p, "down").size(), down.size() / parts);
  }
  const std::vector<HostTensor> inputs{floats({kRows, kHidden}, 5)};
  expectPartsMatch(graph, w, decode, inputs);
}

TEST_P(TensorSlicing, AttentionSplitsByHeadsAndEachPartKeepsItsHeadsOfTheCache) {
  const std::size_t parts = GetParam();
  const int64_t heads = kHeads / static_cast<int64_t>(parts);
  Weights w;
  const ir::Graph graph = attentionWithCache(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);  // after the output projection
    EXPECT_EQ(count(part, "all_gather"), 0);
    for (const char* name : {"past_key", "past_value", "past_key_RetainedState", "past_value_RetainedState"}) {
      EXPECT_EQ(io(part, name).dims, (ir::Dims{1, heads, kContext, kHeadDim})) << name;
    }
    EXPECT_EQ(io(part, "x").dims, (ir::Dims{1, kSeq, kHeads * kHeadDim}));
  }
  EXPECT_THAT(net.report.text(), HasSubstr("retained buffer 'past_key': each part keeps its slice along axis 1"));

  const std::vector<HostTensor> inputs = attentionInputs(ir::DType::Float);
  const auto expected = kernels::test::runGraph(graph, inputs, w.lookup());
  // Each part gets its heads of the caches, as its card would keep them.
  const auto results = runSplit(net, w, inputs, [&](std::size_t p) {
    return std::vector<HostTensor>{inputs[0], inputs[1], inputs[2], headsOf(inputs[3], p, parts),
                                   headsOf(inputs[4], p, parts)};
  });
  for (std::size_t k = 0; k < 3; ++k) {
    std::vector<float> joined;  // y is whole on every part; the caches are joined by heads
    for (std::size_t p = 0; p < parts; ++p) {
      const auto values = results.outputs[p][k].values<float>();
      if (k == 0) expectClose(values, expected[0].values<float>());
      joined.insert(joined.end(), values.begin(), values.end());
    }
    if (k > 0) expectClose(joined, expected[k].values<float>());
  }
}

// With the caches float16 on the device (efficient-transformers' custom IO), cast-placement
// makes the scores a matmul_trans_b over the float16 keys and the mix a matmul over the float16
// values: both split by heads as the matmuls they replace, each part keeping its heads of the
// float16 caches, with no all_gather.
TEST_P(TensorSlicing, AttentionOverAFloat16CacheSplitsByHeadsAfterCastPlacement) {
  const std::size_t parts = GetParam();
  Weights w;
  ir::Graph graph = attentionWithCache(w);
  std::vector<CustomIoEntry> float16;
  for (const char* name : {"past_key", "past_value", "past_key_RetainedState", "past_value_RetainedState"})
    float16.push_back({name, ir::DType::Float16, 1});
  applyCustomIo(graph, float16, "custom_io.yaml");
  ASSERT_EQ(keepRetainedInBufferPrecision(graph, findRetainedPairs(graph)), 2);
  sinkWideningCasts(graph);
  ASSERT_EQ(readNarrowMatmulOperands(graph), 2);
  ASSERT_EQ(count(graph, "matmul_trans_b"), 1);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  const int64_t heads = kHeads / static_cast<int64_t>(parts);
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
    EXPECT_EQ(count(part, "matmul_trans_b"), 1);
    for (const char* name : {"past_key", "past_value", "past_key_RetainedState", "past_value_RetainedState"}) {
      EXPECT_EQ(io(part, name).dims, (ir::Dims{1, heads, kContext, kHeadDim})) << name;
      EXPECT_EQ(io(part, name).dtype, ir::DType::Float16) << name;
    }
  }
  const std::vector<HostTensor> inputs = attentionInputs(ir::DType::Float16);
  const auto expected = kernels::test::runGraph(graph, inputs, w.lookup());
  const auto results = runSplit(net, w, inputs, [&](std::size_t p) {
    return std::vector<HostTensor>{inputs[0], inputs[1], inputs[2], headsOf(inputs[3], p, parts),
                                   headsOf(inputs[4], p, parts)};
  });
  for (std::size_t p = 0; p < parts; ++p)
    expectClose(results.outputs[p][0].values<float>(), expected[0].values<float>());
  for (std::size_t k = 1; k < 3; ++k) {  // each card's float16 heads, joined, are the whole cache's
    std::vector<uint16_t> joined;
    for (std::size_t p = 0; p < parts; ++p) {
      const auto values = results.outputs[p][k].values<uint16_t>();
      joined.insert(joined.end(), values.begin(), values.end());
    }
    EXPECT_EQ(joined, expected[k].values<uint16_t>()) << "cache " << k;
  }
}

// efficient-transformers' cache read: gather_nd over the batch and head axes of the written
// caches. It splits by heads with the caches; the position rows are the same for every part's
// heads, so each part takes its heads' rows of them.
TEST_P(TensorSlicing, ACacheReadByGatherNdSplitsByHeads) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = attentionWithCache(w, kSeq, true);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
    EXPECT_EQ(count(part, "gather_nd"), 2);
  }
  EXPECT_THAT(net.report.text(), HasSubstr("retained buffer 'past_value': each part keeps its slice along axis 1"));
  std::vector<HostTensor> inputs = attentionInputs(ir::DType::Float);
  std::vector<int64_t> positions;  // every head reads the cache in reverse order
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t c = 0; c < kContext; ++c) positions.push_back(kContext - 1 - c);
  }
  inputs.push_back(HostTensor::of(ir::DType::Int64, {1, kHeads, kContext, 1}, positions));
  const auto expected = kernels::test::runGraph(graph, inputs, w.lookup());
  const auto results = runSplit(net, w, inputs, [&](std::size_t p) {
    return std::vector<HostTensor>{
        inputs[0], inputs[1], inputs[2], headsOf(inputs[3], p, parts), headsOf(inputs[4], p, parts), inputs[5]};
  });
  for (std::size_t p = 0; p < parts; ++p)
    expectClose(results.outputs[p][0].values<float>(), expected[0].values<float>());
}

// The same cache read in float16 after cast-placement: both products read the gathered positions
// where they lie (matmul_gathered_b), and split by heads with the caches and their indices.
TEST_P(TensorSlicing, AFloat16CacheReadWhereItLiesSplitsByHeads) {
  const std::size_t parts = GetParam();
  Weights w;
  ir::Graph graph = attentionWithCache(w, kSeq, true);
  std::vector<CustomIoEntry> float16;
  for (const char* name : {"past_key", "past_value", "past_key_RetainedState", "past_value_RetainedState"})
    float16.push_back({name, ir::DType::Float16, 1});
  applyCustomIo(graph, float16, "custom_io.yaml");
  ASSERT_EQ(keepRetainedInBufferPrecision(graph, findRetainedPairs(graph)), 2);
  sinkWideningCasts(graph);
  readNarrowMatmulOperands(graph);
  ASSERT_EQ(count(graph, "matmul_gathered_b"), 2);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
    EXPECT_EQ(count(part, "matmul_gathered_b"), 2);
  }
  EXPECT_THAT(net.report.text(), HasSubstr("retained buffer 'past_key': each part keeps its slice along axis 1"));
  std::vector<HostTensor> inputs = attentionInputs(ir::DType::Float16);
  // Every head reads the cache in reverse order, its last position unfilled (the marker). The
  // positions are an input every part reads whole, taking its heads' rows.
  std::vector<int64_t> positions;
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t c = 0; c < kContext; ++c) positions.push_back(c == 0 ? int64_t{2147483647} : kContext - 1 - c);
  }
  inputs.push_back(HostTensor::of(ir::DType::Int64, {1, kHeads, kContext, 1}, positions));
  const auto expected = kernels::test::runGraph(graph, inputs, w.lookup());
  const auto results = runSplit(net, w, inputs, [&](std::size_t p) {
    return std::vector<HostTensor>{
        inputs[0], inputs[1], inputs[2], headsOf(inputs[3], p, parts), headsOf(inputs[4], p, parts), inputs[5]};
  });
  for (std::size_t p = 0; p < parts; ++p)
    expectClose(results.outputs[p][0].values<float>(), expected[0].values<float>());
}

TEST_P(TensorSlicing, TransformerLayerNeedsTwoSumsAndNoGather) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = transformerLayer(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 2);
    EXPECT_EQ(count(part, "all_gather"), 0);
  }
  for (uint64_t bytes : net.report.weightBytes) EXPECT_LT(bytes, w.bytes() / parts + 1024);
  EXPECT_EQ(net.report.collectiveBytes(), uint64_t(2 * kSeq * kHeads * kHeadDim * sizeof(float)));
  const std::vector<HostTensor> inputs{floats({1, kSeq, kHeads * kHeadDim}, 50)};
  const auto expected = run(graph, w, inputs);
  const auto results = runSplit(net, w, inputs);
  for (std::size_t p = 0; p < parts; ++p) expectClose(results.outputs[p][0].values<float>(), expected);
  // Both sums move the layer's activations, nothing else.
  EXPECT_GT(results.transfers[0].sent, 0u);
}

// Self-attention with one fused qkv projection (GPT-2's c_attn, efficient-transformers' exports):
// x [1, S, H*D] -> matmul [H*D, 3*H*D] + bias -> q, k, v cut out by slices -> heads. With
// `mixed`, a computed tensor is added to the fused result before the cuts.
// What is added to the fused q/k/v projection's result before it is cut: nothing, a whole input,
// or a computed tensor split in one run of columns (not in the projection's groups).
enum class FusedMix { None, WholeInput, SplitInOneRun };

ir::Graph fusedQkvAttention(Weights& w, FusedMix mix) {
  const int64_t hidden = kHeads * kHeadDim;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, kSeq, hidden});
  if (mix == FusedMix::WholeInput) g.input("r", "TL_FLOAT", {1, kSeq, 3 * hidden});
  w.add(g, "wqkv", {hidden, 3 * hidden}, 90);
  w.add(g, "bqkv", {3 * hidden}, 91);
  w.add(g, "wo", {hidden, hidden}, 92);
  if (mix == FusedMix::SplitInOneRun) {
    w.add(g, "wr", {hidden, 3 * hidden}, 95);
    g.op("r_proj", "matmul", {{"src1", "x"}, {"src2", "wr"}}, {{"dst", "r_raw"}})
        .op("r_act", "relu", {{"src", "r_raw"}}, {{"dst", "r"}});
  }
  g.op("qkv_proj", "matmul", {{"src1", "x"}, {"src2", "wqkv"}}, {{"dst", "qkv"}})
      .op("qkv_bias", "elew_bcast", {{"src1", "bqkv"}, {"src2", "qkv"}}, {{"dst", "qkvb"}}, {{"elew_op", "TL_SUM"}});
  std::string fused = "qkvb";
  if (mix != FusedMix::None) {
    g.op("mix_in", "elew", {{"src1", "qkvb"}, {"src2", "r"}}, {{"dst", "qkvr"}}, {{"elew_op", "TL_SUM"}});
    fused = "qkvr";
  }
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    g.op(n + "_cut", "slice", {{"src", fused}}, {{"dst", n + "_flat"}},
         {{"axis", 2}, {"start", i * hidden}, {"len", hidden}});
    toHeads(g, n + "_flat", n + "_h");
  }
  g.op("keys_t", "transpose", {{"src", "k_h"}}, {{"dst", "kt"}}, {{"axes", {0, 1, 3, 2}}})
      .op("scores", "matmul", {{"src1", "q_h"}, {"src2", "kt"}}, {{"dst", "s"}})
      .op("probs", "softmax", {{"src", "s"}}, {{"dst", "p"}}, {{"axis", 3}})
      .op("mix", "matmul", {{"src1", "p"}, {"src2", "v_h"}}, {{"dst", "att"}})
      .op("merge_t", "transpose", {{"src", "att"}}, {{"dst", "att_t"}}, {{"axes", {0, 2, 1, 3}}})
      .op("merge", "reshape", {{"src", "att_t"}}, {{"dst", "att_flat"}}, {{"dims", {1, kSeq, hidden}}})
      .op("o_proj", "matmul", {{"src1", "att_flat"}, {"src2", "wo"}}, {{"dst", "y"}})
      .output("y", "TL_FLOAT", {1, kSeq, hidden});
  return g.graph();
}

// The fused projection's columns are three groups (q, k, v): each part keeps its heads of every
// group (weight and bias), so each cut is its heads of q, k or v and attention splits by heads
// with one sum, as with three projections. A whole input added to the fused result is cut the
// same way on each part (a local gather of its share of every group, no traffic). A tensor split
// in one run of columns added to it cannot be: both are gathered (the fused one put back in its
// order by a gather at the inverse permutation) and attention runs whole; the result is the same.
TEST_P(TensorSlicing, FusedQkvSplitsEachOfItsGroupsByHeads) {
  const std::size_t parts = GetParam();
  for (FusedMix mix : {FusedMix::None, FusedMix::WholeInput, FusedMix::SplitInOneRun}) {
    const auto which = static_cast<int>(mix);
    Weights w;
    const ir::Graph graph = fusedQkvAttention(w, mix);
    const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
    EXPECT_THAT(net.report.text(), HasSubstr("matmul 'qkv_proj': column split in 3 fused groups of weight 'wqkv'"));
    for (const auto& part : net.parts) {
      const bool whole = mix == FusedMix::SplitInOneRun;
      // Whole attention: its output projection's columns are gathered for the output.
      EXPECT_EQ(count(part, "all_reduce_sum"), whole ? 0 : 1) << which;
      EXPECT_EQ(count(part, "all_gather"), whole ? 3 : 0) << which;
      EXPECT_EQ(count(part, "gather"), mix == FusedMix::None ? 0 : 1) << which;
    }
    // Part 1's first row of the weight: column share * 1 of q, then of k, then of v.
    const int64_t hidden = kHeads * kHeadDim, share = hidden / static_cast<int64_t>(parts);
    const auto* whole = reinterpret_cast<const float*>(w.lookup()("wqkv")->data.data());
    const ir::WeightTensor* slice = net.findWeight(1, "wqkv.part1of" + std::to_string(parts), nullptr);
    ASSERT_NE(slice, nullptr);
    const auto* part = reinterpret_cast<const float*>(slice->data.data());
    for (int64_t g = 0; g < 3; ++g) EXPECT_EQ(part[g * share], whole[g * hidden + share]);
    std::vector<HostTensor> inputs{floats({1, kSeq, hidden}, 93)};
    if (mix == FusedMix::WholeInput) inputs.push_back(floats({1, kSeq, 3 * hidden}, 94));
    expectPartsMatch(graph, w, net, inputs);
  }
}

// nn.MultiheadAttention's export: sequence first [L, N, E], the heads of every batch element
// merged into one batch axis ([L, N*H, D], then [N*H, L, D]), a mask [N*H, 1, L] over it, and the
// output projection a Gemm over [L*N, E]. Each part keeps its heads of every batch element (the
// batch axis in N groups), takes its share of the mask locally, and the output projection sums
// once: no gather.
TEST_P(TensorSlicing, MultiheadAttentionLayoutSplitsByHeadsOfEveryBatchElement) {
  const std::size_t parts = GetParam();
  constexpr int64_t batch = 2, hidden = kHeads * kHeadDim, rows = batch * kHeads;
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kSeq, batch, hidden}).input("mask", "TL_FLOAT", {rows, 1, kSeq});
  for (const char* n : {"q", "k", "v"}) {
    const std::string name = n;
    w.add(g, "w" + name, {hidden, hidden}, static_cast<uint32_t>(100 + name[0]));
    g.op(name + "_proj", "matmul", {{"src1", "x"}, {"src2", "w" + name}}, {{"dst", name}})
        .op(name + "_heads", "reshape", {{"src", name}}, {{"dst", name + "_h"}}, {{"dims", {kSeq, rows, kHeadDim}}});
  }
  w.add(g, "wo", {hidden, hidden}, 110);
  w.add(g, "bo", {hidden}, 111);
  g.op("q_t", "transpose", {{"src", "q_h"}}, {{"dst", "qt"}}, {{"axes", {1, 0, 2}}})
      .op("k_t", "transpose", {{"src", "k_h"}}, {{"dst", "kt"}}, {{"axes", {1, 2, 0}}})
      .op("v_t", "transpose", {{"src", "v_h"}}, {{"dst", "vt"}}, {{"axes", {1, 0, 2}}})
      .op("scores", "matmul", {{"src1", "qt"}, {"src2", "kt"}}, {{"dst", "s"}})
      .op("masked", "elew_bcast", {{"src1", "s"}, {"src2", "mask"}}, {{"dst", "sm"}}, {{"elew_op", "TL_SUM"}})
      .op("probs", "softmax", {{"src", "sm"}}, {{"dst", "p"}}, {{"axis", 2}})
      .op("mix", "matmul", {{"src1", "p"}, {"src2", "vt"}}, {{"dst", "att"}})
      .op("seq_first", "transpose", {{"src", "att"}}, {{"dst", "att_t"}}, {{"axes", {1, 0, 2}}})
      .op("merge", "reshape", {{"src", "att_t"}}, {{"dst", "att_flat"}}, {{"dims", {kSeq * batch, hidden}}})
      .op("out_proj", "gemm", {{"a", "att_flat"}, {"b", "wo"}, {"c", "bo"}}, {{"dst", "y"}},
          {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", false}, {"trans_b", true}})
      .output("y", "TL_FLOAT", {kSeq * batch, hidden});
  const ir::Graph graph = g.graph();
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  EXPECT_THAT(net.report.text(), HasSubstr("gemm 'out_proj': row split of weight 'wo'"));
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
    EXPECT_EQ(count(part, "gather"), 1);  // its share of the mask
    const ir::Dims heads{rows / static_cast<int64_t>(parts), kSeq, kSeq};
    EXPECT_EQ(part.tensors.at("p").dims, heads);
  }
  const std::vector<HostTensor> inputs{floats({kSeq, batch, hidden}, 112), floats({rows, 1, kSeq}, 113)};
  expectPartsMatch(graph, w, net, inputs);
}

// A lone projection to the output: column split, then all_gather to make the output whole.
TEST(TensorSlicingCases, LoneMatmulIsGatheredForTheOutput) {
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {2, 8});
  w.add(g, "head", {8, 12}, 60);
  g.op("logits", "matmul", {{"src1", "x"}, {"src2", "head"}}, {{"dst", "y"}}).output("y", "TL_FLOAT", {2, 12});
  const ir::Graph graph = g.graph();
  const SlicedNetwork net = sliceTensors(graph, 2, w.lookup());
  EXPECT_EQ(count(net.parts[0], "all_gather"), 1);
  EXPECT_EQ(net.report.collectiveBytes(), uint64_t(2 * 12 * sizeof(float)));
  const std::vector<HostTensor> inputs{floats({2, 8}, 61)};
  const auto results = runSplit(net, w, inputs);
  expectClose(results.outputs[1][0].values<float>(), run(graph, w, inputs));
}

// Sizes that do not divide stay whole, and the report says why; the result is still right.
TEST(TensorSlicingCases, IndivisibleSizesAreReplicatedAndReported) {
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {2, 8});
  w.add(g, "odd", {8, 10}, 70);
  w.add(g, "small", {10, 8}, 71);
  g.op("a", "matmul", {{"src1", "x"}, {"src2", "odd"}}, {{"dst", "h"}})
      .op("b", "matmul", {{"src1", "h"}, {"src2", "small"}}, {{"dst", "y"}})
      .output("y", "TL_FLOAT", {2, 8});
  const ir::Graph graph = g.graph();
  SliceOptions options;
  options.minWeightBytes = 1024;
  const SlicedNetwork net = sliceTensors(graph, 4, w.lookup(), options);
  EXPECT_THAT(net.report.text(),
              HasSubstr("matmul 'a': weight 'odd' [8,10] stays whole: 10 columns do not divide among 4 parts"));
  EXPECT_THAT(net.report.text(),
              HasSubstr("matmul 'b': weight 'small' [10,8] stays whole: 320 bytes, below the 1024-byte minimum"));
  EXPECT_EQ(net.report.collectives.size(), 0u);
  for (uint64_t bytes : net.report.weightBytes) EXPECT_EQ(bytes, w.bytes());
  const std::vector<HostTensor> inputs{floats({2, 8}, 72)};
  expectClose(runSplit(net, w, inputs).outputs[3][0].values<float>(), run(graph, w, inputs));
}

// Three heads over two parts: the projections still split, but the heads cannot, so the
// split projections are gathered before the per-head ops, which run replicated.
TEST(TensorSlicingCases, HeadsThatDoNotDivideAreGathered) {
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 2, 12});
  w.add(g, "wq", {12, 12}, 80);
  g.op("q", "matmul", {{"src1", "x"}, {"src2", "wq"}}, {{"dst", "qf"}})
      .op("view", "reshape", {{"src", "qf"}}, {{"dst", "qh"}}, {{"dims", {1, 2, 3, 4}}})
      .op("probs", "softmax", {{"src", "qh"}}, {{"dst", "y"}}, {{"axis", 3}})
      .output("y", "TL_FLOAT", {1, 2, 3, 4});
  const ir::Graph graph = g.graph();
  const SlicedNetwork net = sliceTensors(graph, 2, w.lookup());
  EXPECT_EQ(count(net.parts[0], "all_gather"), 1);
  EXPECT_THAT(net.report.text(), HasSubstr("'qf' is made whole (all_gather 0)"));
  const std::vector<HostTensor> inputs{floats({1, 2, 12}, 81)};
  expectClose(runSplit(net, w, inputs).outputs[0][0].values<float>(), run(graph, w, inputs));
}

TEST(TensorSlicingCases, SlicesAreNamedPerPartAndCollectivesNumberedInOrder) {
  Weights w;
  const ir::Graph graph = transformerLayer(w);
  const SlicedNetwork net = sliceTensors(graph, 2, w.lookup());
  ASSERT_EQ(net.weights.size(), 2u);
  for (std::size_t p = 0; p < 2; ++p) {
    std::vector<std::string> names;
    for (const auto& t : net.weights[p]) names.push_back(t.name);
    EXPECT_THAT(names, ::testing::Contains("fc1.part" + std::to_string(p) + "of2"));
    int expectedId = 0;
    for (const auto& op : net.parts[p].ops) {
      if (op.optype == "all_reduce_sum" || op.optype == "all_gather") {
        EXPECT_EQ(op.integer("collective"), expectedId++);
      }
    }
  }
  // The slices are the weight's columns: part 1's first row starts at column 4*hidden/2.
  const ir::WeightTensor* slice = net.findWeight(1, "fc1.part1of2", nullptr);
  ASSERT_NE(slice, nullptr);
  const ir::WeightTensor* whole = w.lookup()("fc1");
  const auto* from = reinterpret_cast<const float*>(whole->data.data());
  const auto* part = reinterpret_cast<const float*>(slice->data.data());
  EXPECT_EQ(part[0], from[2 * kHeads * kHeadDim]);
  EXPECT_EQ(slice->dims, (ir::Dims{kHeads * kHeadDim, 2 * kHeads * kHeadDim}));
}

// ---- convolutional networks ------------------------------------------------------------------

// The ops of `g` of type `optype`.
std::vector<const ir::Op*> opsOf(const ir::Graph& g, const std::string& optype) {
  std::vector<const ir::Op*> found;
  for (const auto& op : g.ops) {
    if (op.optype == optype) found.push_back(&op);
  }
  return found;
}

std::string perPart(int64_t extent, std::size_t parts) { return std::to_string(extent / int64_t(parts)); }

// The first conv divides its output channels (with its bias and the batchnorm's parameters),
// relu and pooling keep the split, and the second divides its input channels and sums: one
// all_reduce_sum, the second conv's bias added by part 0 only (the others add zeros).
TEST_P(TensorSlicing, ConvIsAColumnThenARowSplitThatAddsItsBiasOnce) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = convBlock(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
  }
  EXPECT_EQ(count(net.parts[0], "zeros"), 0);
  for (std::size_t p = 1; p < parts; ++p) EXPECT_EQ(count(net.parts[p], "zeros"), 1) << "part " << p;
  const std::string text = net.report.text();
  EXPECT_THAT(text, HasSubstr("conv2d 'conv1': column split of weight 'conv1_w' [16,8,3,3] -> [" + perPart(16, parts) +
                              ",8,3,3] per part"));
  EXPECT_THAT(text, HasSubstr("conv2d 'conv2': row split of weight 'conv2_w' [8,16,3,3] -> [8," + perPart(16, parts) +
                              ",3,3] per part"));
  // Every constant divided, except the second bias, which only part 0 reads.
  const uint64_t divided = (16 * 8 * 9 + 16 + 4 * 16 + 8 * 16 * 9) * sizeof(float);
  EXPECT_EQ(net.report.weightBytes[0], divided / parts + 8 * sizeof(float));
  for (std::size_t p = 1; p < parts; ++p) EXPECT_EQ(net.report.weightBytes[p], divided / parts);
  EXPECT_EQ(net.report.collectiveBytes(), uint64_t(kImages * 8 * 3 * 3 * sizeof(float)));

  const std::vector<HostTensor> inputs{floats({kImages, 8, kSide, kSide}, 150)};
  expectPartsMatch(graph, w, net, inputs);
}

// A ResNet bottleneck: 1x1 column split, 3x3 row split and sum, 1x1 column split; the residual
// add slices the whole block input locally, and the pooled, flattened channels reach the
// classifier split, which sums: two all_reduce_sums, nothing gathered.
TEST_P(TensorSlicing, BottleneckResidualAndClassifierNeedNoGather) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = bottleneckWithHead(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 2);
    EXPECT_EQ(count(part, "all_gather"), 0);
  }
  const std::string text = net.report.text();
  EXPECT_THAT(text, HasSubstr("conv2d 'reduce': column split"));
  EXPECT_THAT(text, HasSubstr("conv2d 'spatial': row split"));
  EXPECT_THAT(text, HasSubstr("conv2d 'expand': column split"));
  EXPECT_THAT(text, HasSubstr("gemm 'fc': row split of weight 'fc_w' [10,16] -> [10," + perPart(16, parts) + "]"));
  for (uint64_t bytes : net.report.weightBytes) EXPECT_LT(bytes, w.bytes() / parts + 64);
  const std::vector<HostTensor> inputs{floats({kImages, 16, kSide, kSide}, 151)};
  expectPartsMatch(graph, w, net, inputs);
}

// The depthwise conv takes the expansion's channel split as it is: each part convolves its
// groups (16 / parts of them) with no traffic. The squeeze-excitation pools the split, sums
// its reduction and divides its expansion again, so the gate multiplies split by split.
TEST_P(TensorSlicing, DepthwiseAndSqueezeExcitationKeepTheChannelSplit) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = invertedResidual(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 2);  // the squeeze and the projection
    EXPECT_EQ(count(part, "all_gather"), 0);
    int depthwise = 0;
    for (const ir::Op* op : opsOf(part, "conv2d")) {
      if (op->name != "depthwise") continue;
      ++depthwise;
      EXPECT_EQ(op->integer("group"), 16 / int64_t(parts));
      EXPECT_EQ(part.tensors.at(op->inputs[1].name).dims, (ir::Dims{16 / int64_t(parts), 1, 3, 3}));
    }
    EXPECT_EQ(depthwise, 1);
  }
  EXPECT_THAT(net.report.text(), HasSubstr("conv2d 'depthwise': group split (" + perPart(16, parts) +
                                           " of 16 groups) of weight 'depthwise_w' [16,1,3,3]"));
  EXPECT_THAT(net.report.text(), HasSubstr("conv2d 'se_reduce': row split"));
  EXPECT_THAT(net.report.text(), HasSubstr("conv2d 'se_expand': column split"));
  const std::vector<HostTensor> inputs{floats({kImages, 8, kSide, kSide}, 152)};
  expectPartsMatch(graph, w, net, inputs);
}

// A depthwise conv of a whole input is sliced locally only where its result stays split: not
// ConvNeXt's, which a layernorm over the channels reads (it stays whole, and the block's
// linears split as an MLP's), but the second one, which a 1x1 conv reads by input channels.
TEST_P(TensorSlicing, ADepthwiseConvOfAWholeInputSplitsOnlyWhereItsResultStaysSplit) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = convNextBlock(w, true);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 2);  // the second linear and the 1x1 conv
    EXPECT_EQ(count(part, "all_gather"), 0);
  }
  const std::string text = net.report.text();
  EXPECT_THAT(text, HasSubstr("conv2d 'dw': weight 'dw_w' [16,1,3,3] stays whole: its output channels would have to "
                              "be gathered for its readers"));
  EXPECT_THAT(text, HasSubstr("conv2d 'dw2': group split"));
  EXPECT_THAT(text, HasSubstr("matmul 'pw1_mm': column split"));
  EXPECT_THAT(text, HasSubstr("conv2d 'pw3': row split"));
  const std::vector<HostTensor> inputs{floats({1, 16, 4, 4}, 153)};
  expectPartsMatch(graph, w, net, inputs);
}

// The N-d conv splits as conv2d does; a pad of the length and a resize of it keep the channel
// split (the resize's dims naming each part's channels).
TEST_P(TensorSlicing, NdConvPadAndResizeKeepTheChannelSplit) {
  const std::size_t parts = GetParam();
  Weights w;
  const ir::Graph graph = sequenceConvs(w);
  const SlicedNetwork net = sliceTensors(graph, parts, w.lookup());
  for (const auto& part : net.parts) {
    EXPECT_EQ(count(part, "all_reduce_sum"), 1);
    EXPECT_EQ(count(part, "all_gather"), 0);
    const auto resizes = opsOf(part, "resize");
    ASSERT_EQ(resizes.size(), 1u);
    EXPECT_EQ(resizes[0]->integers("dims"), (std::vector<int64_t>{kImages, 16 / int64_t(parts), 24}));
  }
  EXPECT_THAT(net.report.text(), HasSubstr("conv 'seq1': column split of weight 'seq1_w' [16,8,3]"));
  EXPECT_THAT(net.report.text(), HasSubstr("conv 'seq2': row split of weight 'seq2_w' [8,16,3]"));
  const std::vector<HostTensor> inputs{floats({kImages, 8, 10}, 154)};
  expectPartsMatch(graph, w, net, inputs);
}

// ConvNeXt's stem: a conv whose channels a layernorm over the channels reads stays whole, rather
// than have its result gathered; so does nothing else, and nothing moves between the parts.
TEST(TensorSlicingCases, AConvWhoseChannelsWouldBeGatheredStaysWhole) {
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 8, 4, 4});
  conv(g, w, "stem", "x", "c", 8, 16, 1, 170);
  g.create("ln_scale", "TL_FLOAT", {16}, std::vector<double>(16, 1.2))
      .create("ln_bias", "TL_FLOAT", {16}, std::vector<double>(16, 0.1))
      .op("to_last", "transpose", {{"src", "c"}}, {{"dst", "cl"}}, {{"axes", {0, 2, 3, 1}}})
      .op("ln", "layernorm", {{"src", "cl"}, {"scale", "ln_scale"}, {"bias", "ln_bias"}}, {{"dst", "y"}},
          {{"axis", 3}, {"epsilon", 1e-6}})
      .output("y", "TL_FLOAT", {1, 4, 4, 16});
  const ir::Graph graph = g.graph();
  const SlicedNetwork net = sliceTensors(graph, 2, w.lookup());
  EXPECT_THAT(net.report.text(), HasSubstr("conv2d 'stem': weight 'stem_w' [16,8,1,1] stays whole: its output "
                                           "channels would have to be gathered for its readers"));
  EXPECT_EQ(net.report.collectives.size(), 0u);
  for (uint64_t bytes : net.report.weightBytes) EXPECT_EQ(bytes, w.bytes());
  const std::vector<HostTensor> inputs{floats({1, 8, 4, 4}, 171)};
  expectClose(runSplit(net, w, inputs).outputs[1][0].values<float>(), run(graph, w, inputs));
}

// Channels that do not divide among the parts, and groups that do not, stay whole and say why;
// the result is still right.
TEST(TensorSlicingCases, ConvChannelsOrGroupsThatDoNotDivideAreReplicated) {
  Weights w;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 6, 4, 4});
  conv(g, w, "odd", "x", "c", 6, 6, 3, 160);
  conv(g, w, "grouped", "c", "y", 6, 6, 3, 162, 3);
  g.output("y", "TL_FLOAT", {1, 6, 4, 4});
  const ir::Graph graph = g.graph();
  const SlicedNetwork net = sliceTensors(graph, 4, w.lookup());
  EXPECT_THAT(net.report.text(),
              HasSubstr("conv2d 'odd': weight 'odd_w' [6,6,3,3] stays whole: 6 columns do not divide among 4 parts"));
  EXPECT_EQ(net.report.text().find("split: conv"), std::string::npos) << net.report.text();
  EXPECT_EQ(net.report.collectives.size(), 0u);
  for (uint64_t bytes : net.report.weightBytes) EXPECT_EQ(bytes, w.bytes());
  const std::vector<HostTensor> inputs{floats({1, 6, 4, 4}, 164)};
  expectClose(runSplit(net, w, inputs).outputs[2][0].values<float>(), run(graph, w, inputs));
}

}  // namespace
}  // namespace qaic::compiler::partition
