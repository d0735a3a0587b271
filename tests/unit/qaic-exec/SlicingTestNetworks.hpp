// SPDX-License-Identifier: Apache-2.0
// The networks the tensor slicing tests split (an MLP, self-attention writing a retained KV
// cache, a transformer layer, convolutional blocks) and their weights file in memory: shared by
// the slicing test and the multi-device compile's pass test, so both split the same networks.
#pragma once

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "GraphBuilder.hpp"
#include "partition/TensorSlicing.hpp"

namespace qaic::compiler::partition::slicing_test {

using kernels::test::GraphBuilder;
using kernels::test::Json;
using kernels::test::randomFloats;
using kernels::test::sameSizeConv3x3;

// The network's weights file, in memory.
class Weights {
 public:
  // A from_file constant `name` of random values, added to the graph.
  void add(GraphBuilder& g, const std::string& name, const ir::Dims& dims, uint32_t seed, float scale = 0.3f) {
    addBetween(g, name, dims, seed, -scale, scale);
  }
  // The same of values in [low, high] (a batchnorm's variances: positive).
  void addBetween(GraphBuilder& g, const std::string& name, const ir::Dims& dims, uint32_t seed, float low,
                  float high) {
    auto& values = values_[name];
    values = randomFloats(static_cast<std::size_t>(ir::elementCount(dims)), seed, low, high);
    tensors_[name] = {name, ir::DType::Float, dims, std::as_bytes(std::span(values))};
    g.create(name, "TL_FLOAT", dims, {}, {0, 0}, true);
  }
  WeightLookup lookup() const {
    return [this](std::string_view name) -> const ir::WeightTensor* {
      auto it = tensors_.find(std::string(name));
      return it == tensors_.end() ? nullptr : &it->second;
    };
  }
  // Every tensor, as a loaded model's weights (views into this object).
  std::vector<ir::WeightTensor> tensors() const {
    std::vector<ir::WeightTensor> all;
    for (const auto& [name, t] : tensors_) all.push_back(t);
    return all;
  }
  uint64_t bytes() const {
    uint64_t total = 0;
    for (const auto& [name, t] : tensors_) total += t.data.size();
    return total;
  }

 private:
  std::map<std::string, std::vector<float>> values_;
  std::map<std::string, ir::WeightTensor> tensors_;
};

inline const ir::IoBuffer& io(const ir::Graph& g, const std::string& name) {
  for (const auto& b : g.io) {
    if (b.bufferName == name) return b;
  }
  throw std::runtime_error("no io buffer " + name);
}

constexpr int64_t kRows = 5, kHidden = 16, kInner = 64;

// x [rows, hidden] -> matmul + bias -> gelu -> matmul + bias -> y.
inline ir::Graph mlp(Weights& w) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kRows, kHidden});
  w.add(g, "up", {kHidden, kInner}, 1);
  w.add(g, "up_bias", {kInner}, 2);
  w.add(g, "down", {kInner, kHidden}, 3);
  w.add(g, "down_bias", {kHidden}, 4);
  g.op("up_mm", "matmul", {{"src1", "x"}, {"src2", "up"}}, {{"dst", "h"}})
      .op("up_add", "elew_bcast", {{"src1", "h"}, {"src2", "up_bias"}}, {{"dst", "hb"}}, {{"elew_op", "TL_SUM"}})
      .op("act", "unary", {{"src", "hb"}}, {{"dst", "a"}}, {{"func", "gelu"}, {"alpha", 0}, {"beta", 0}})
      .op("down_mm", "matmul", {{"src1", "a"}, {"src2", "down"}}, {{"dst", "d"}})
      .op("down_add", "elew_bcast", {{"src1", "d"}, {"src2", "down_bias"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}})
      .output("y", "TL_FLOAT", {kRows, kHidden});
  return g.graph();
}

constexpr int64_t kHeads = 4, kHeadDim = 4, kSeq = 3, kContext = 8;

// [1, S, H*D] -> heads [1, H, S, D].
inline void toHeads(GraphBuilder& g, const std::string& from, const std::string& to, int64_t seq = kSeq) {
  g.op(to + "_view", "reshape", {{"src", from}}, {{"dst", to + "_v"}}, {{"dims", {1, seq, kHeads, kHeadDim}}})
      .op(to + "_heads", "transpose", {{"src", to + "_v"}}, {{"dst", to}}, {{"axes", {0, 2, 1, 3}}});
}

// rotate_half(t) * sin + t * cos over the last axis (the head dim).
inline void rotary(GraphBuilder& g, const std::string& t, const std::string& out) {
  const int64_t half = kHeadDim / 2;
  g.op(t + "_lo", "slice", {{"src", t}}, {{"dst", t + "_lo"}}, {{"axis", 3}, {"start", 0}, {"len", half}})
      .op(t + "_hi", "slice", {{"src", t}}, {{"dst", t + "_hi"}}, {{"axis", 3}, {"start", half}, {"len", half}})
      .op(t + "_neg", "unary", {{"src", t + "_hi"}}, {{"dst", t + "_nhi"}},
          {{"func", "neg"}, {"alpha", 0}, {"beta", 0}})
      .op(t + "_rot", "concat", {{"src1", t + "_nhi"}, {"src2", t + "_lo"}}, {{"dst", t + "_r"}}, {{"axis", 3}})
      .op(t + "_cos", "elew_bcast", {{"src1", t}, {"src2", "cos"}}, {{"dst", t + "_c"}}, {{"elew_op", "TL_MUL"}})
      .op(t + "_sin", "elew_bcast", {{"src1", t + "_r"}, {"src2", "sin"}}, {{"dst", t + "_s"}}, {{"elew_op", "TL_MUL"}})
      .op(t + "_sum", "elew", {{"src1", t + "_c"}, {"src2", t + "_s"}}, {{"dst", out}}, {{"elew_op", "TL_SUM"}});
}

// Self-attention over x [1, S, H*D] into `out`; with a cache, k and v are written into the
// retained past_key / past_value [1, H, C, D] at the positions `indices` names (scatter_nd of
// (batch, head, position) tuples) and attention reads the whole cache under an additive mask;
// with `gatherRead`, it reads the cache rows at `positions` [1, H, C, 1] with gather_nd over the
// batch and head axes (efficient-transformers' CtxGather).
inline void attention(GraphBuilder& g, Weights& w, const std::string& x, const std::string& out, bool cache, bool rope,
                      int64_t seq = kSeq, bool gatherRead = false) {
  const int64_t hidden = kHeads * kHeadDim;
  for (const char* name : {"q", "k", "v"}) {
    const std::string n = name;
    w.add(g, "w" + n, {hidden, hidden}, static_cast<uint32_t>(10 + n[0]));
    g.op(n + "_proj", "matmul", {{"src1", x}, {"src2", "w" + n}}, {{"dst", n + "_flat"}});
    toHeads(g, n + "_flat", n + "_h", seq);
  }
  std::string q = "q_h", k = "k_h";
  if (rope) {
    rotary(g, "q_h", "q_rope");
    rotary(g, "k_h", "k_rope");
    q = "q_rope";
    k = "k_rope";
  }
  std::string keys = k, values = "v_h";
  if (cache) {
    g.op("write_k", "scatter_nd", {{"src", "past_key"}, {"indices", "indices"}, {"updates", k}}, {{"dst", "key"}},
         {{"reduction", "none"}})
        .op("write_v", "scatter_nd", {{"src", "past_value"}, {"indices", "indices"}, {"updates", "v_h"}},
            {{"dst", "value"}}, {{"reduction", "none"}});
    keys = "key";
    values = "value";
  }
  if (cache && gatherRead) {
    g.op("read_k", "gather_nd", {{"src", "key"}, {"indices", "positions"}}, {{"dst", "key_read"}}, {{"batch_dims", 2}})
        .op("read_v", "gather_nd", {{"src", "value"}, {"indices", "positions"}}, {{"dst", "value_read"}},
            {{"batch_dims", 2}});
    keys = "key_read";
    values = "value_read";
  }
  g.op("keys_t", "transpose", {{"src", keys}}, {{"dst", "kt"}}, {{"axes", {0, 1, 3, 2}}})
      .op("scores", "matmul", {{"src1", q}, {"src2", "kt"}}, {{"dst", "s"}})
      .create("scale", "TL_FLOAT", {1}, {1.0 / std::sqrt(double(kHeadDim))})
      .op("scaled", "elew_bcast", {{"src1", "s"}, {"src2", "scale"}}, {{"dst", "ss"}}, {{"elew_op", "TL_MUL"}});
  std::string scores = "ss";
  if (cache) {
    g.op("masked", "elew_bcast", {{"src1", "ss"}, {"src2", "mask"}}, {{"dst", "sm"}}, {{"elew_op", "TL_SUM"}});
    scores = "sm";
  }
  w.add(g, "wo", {hidden, hidden}, 20);
  g.op("probs", "softmax", {{"src", scores}}, {{"dst", "p"}}, {{"axis", 3}})
      .op("mix", "matmul", {{"src1", "p"}, {"src2", values}}, {{"dst", "att"}})
      .op("merge_t", "transpose", {{"src", "att"}}, {{"dst", "att_t"}}, {{"axes", {0, 2, 1, 3}}})
      .op("merge", "reshape", {{"src", "att_t"}}, {{"dst", "att_flat"}}, {{"dims", {1, seq, hidden}}})
      .op("o_proj", "matmul", {{"src1", "att_flat"}, {"src2", "wo"}}, {{"dst", out}});
}

inline ir::Graph attentionWithCache(Weights& w, int64_t seq = kSeq, bool gatherRead = false) {
  const int64_t hidden = kHeads * kHeadDim;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, seq, hidden})
      .input("indices", "TL_INT64", {1, kHeads, seq, 3})
      .input("mask", "TL_FLOAT", {1, 1, seq, kContext})
      .input("past_key", "TL_FLOAT", {1, kHeads, kContext, kHeadDim})
      .input("past_value", "TL_FLOAT", {1, kHeads, kContext, kHeadDim});
  if (gatherRead) g.input("positions", "TL_INT64", {1, kHeads, kContext, 1});
  attention(g, w, "x", "o", true, false, seq, gatherRead);
  g.op("residual", "elew", {{"src1", "x"}, {"src2", "o"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}})
      .output("y", "TL_FLOAT", {1, seq, hidden});
  ir::Graph graph = g.graph();
  // The retained pairs: the written caches leave as <input>_RetainedState.
  for (const char* name : {"past_key", "past_value"}) {
    ir::IoBuffer out = io(graph, name);
    out.bufferName += "_RetainedState";
    out.tensor = std::string(name) == "past_key" ? "key" : "value";
    out.direction = ir::Direction::Out;
    graph.io.push_back(out);
  }
  ir::inferShapes(graph);
  return graph;
}

// Pre-norm transformer layer: x + attention(layernorm(x)) with rotary q and k, then + MLP.
inline ir::Graph transformerLayer(Weights& w) {
  const int64_t hidden = kHeads * kHeadDim;
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, kSeq, hidden});
  std::vector<double> cosines, sines;
  for (int64_t s = 0; s < kSeq; ++s) {
    for (int64_t d = 0; d < kHeadDim; ++d) {
      const double angle = double(s + 1) / std::pow(100.0, double(d % (kHeadDim / 2)) / double(kHeadDim));
      cosines.push_back(std::cos(angle));
      sines.push_back(std::sin(angle));
    }
  }
  g.create("cos", "TL_FLOAT", {kSeq, kHeadDim}, cosines).create("sin", "TL_FLOAT", {kSeq, kHeadDim}, sines);
  g.create("ln1_scale", "TL_FLOAT", {hidden}, std::vector<double>(hidden, 1.1))
      .create("ln1_bias", "TL_FLOAT", {hidden}, std::vector<double>(hidden, 0.05))
      .op("ln1", "layernorm", {{"src", "x"}, {"scale", "ln1_scale"}, {"bias", "ln1_bias"}}, {{"dst", "n1"}},
          {{"axis", 2}, {"epsilon", 1e-5}});
  attention(g, w, "n1", "o", false, true);
  g.op("residual1", "elew", {{"src1", "x"}, {"src2", "o"}}, {{"dst", "r1"}}, {{"elew_op", "TL_SUM"}})
      .create("ln2_scale", "TL_FLOAT", {hidden}, std::vector<double>(hidden, 0.9))
      .create("ln2_bias", "TL_FLOAT", {hidden}, std::vector<double>(hidden, -0.05))
      .op("ln2", "layernorm", {{"src", "r1"}, {"scale", "ln2_scale"}, {"bias", "ln2_bias"}}, {{"dst", "n2"}},
          {{"axis", 2}, {"epsilon", 1e-5}});
  w.add(g, "fc1", {hidden, 4 * hidden}, 30);
  w.add(g, "fc1_bias", {4 * hidden}, 31);
  w.add(g, "fc2", {4 * hidden, hidden}, 32);
  g.op("fc1_mm", "matmul", {{"src1", "n2"}, {"src2", "fc1"}}, {{"dst", "f1"}})
      .op("fc1_add", "elew_bcast", {{"src1", "f1"}, {"src2", "fc1_bias"}}, {{"dst", "f1b"}}, {{"elew_op", "TL_SUM"}})
      .op("fc_act", "unary", {{"src", "f1b"}}, {{"dst", "f1a"}}, {{"func", "gelu_tanh"}, {"alpha", 0}, {"beta", 0}})
      .op("fc2_mm", "matmul", {{"src1", "f1a"}, {"src2", "fc2"}}, {{"dst", "f2"}})
      .op("residual2", "elew", {{"src1", "r1"}, {"src2", "f2"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}})
      .output("y", "TL_FLOAT", {1, kSeq, hidden});
  return g.graph();
}

// ---- convolutional networks (NCHW) ---------------------------------------------------------

constexpr int64_t kImages = 2, kSide = 6;

// conv2d params of a k x k window (k = 1 or 3), stride 1, the image size kept.
inline Json convParams(int64_t k, int64_t group = 1) {
  if (k == 3) return sameSizeConv3x3(group);
  return {{"group", group},          {"size", {1, 1}},     {"stride", {1, 1}},
          {"padding", {0, 0, 0, 0}}, {"dilation", {1, 1}}, {"autopad", "NOTSET"}};
}

// `name`: conv2d of `src` with a weight [out, in/group, k, k] and a bias [out] from the weights.
inline void conv(GraphBuilder& g, Weights& w, const std::string& name, const std::string& src, const std::string& dst,
                 int64_t in, int64_t out, int64_t k, uint32_t seed, int64_t group = 1) {
  w.add(g, name + "_w", {out, in / group, k, k}, seed);
  w.add(g, name + "_b", {out}, seed + 1, 1.0f);
  g.op(name, "conv2d", {{"src", src}, {"weight", name + "_w"}, {"bias", name + "_b"}}, {{"dst", dst}},
       convParams(k, group));
}

// x [2, 8, 6, 6] -> conv 3x3 to 16 channels -> batchnorm -> relu -> maxpool 2x2 -> conv 3x3 to 8
// channels -> y [2, 8, 3, 3]: a column split, then a row split whose bias must be added once.
inline ir::Graph convBlock(Weights& w) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kImages, 8, kSide, kSide});
  conv(g, w, "conv1", "x", "c1", 8, 16, 3, 100);
  w.add(g, "bn_scale", {16}, 102, 1.0f);
  w.add(g, "bn_offset", {16}, 103, 1.0f);
  w.add(g, "bn_mean", {16}, 104, 1.0f);
  w.addBetween(g, "bn_var", {16}, 105, 0.5f, 2.0f);
  g.op("bn", "batchnorm",
       {{"src", "c1"}, {"scale", "bn_scale"}, {"offset", "bn_offset"}, {"mean", "bn_mean"}, {"var", "bn_var"}},
       {{"dst", "n1"}}, {{"epsilon", 1e-5}})
      .op("act", "relu", {{"src", "n1"}}, {{"dst", "a1"}})
      .op("pool", "maxpool2d", {{"src", "a1"}}, {{"dst", "p1"}},
          {{"size", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0, 0, 0}}, {"autopad", "NOTSET"}});
  conv(g, w, "conv2", "p1", "y", 16, 8, 3, 106);
  g.output("y", "TL_FLOAT", {kImages, 8, kSide / 2, kSide / 2});
  return g.graph();
}

// A ResNet bottleneck and head: x [2, 16, 6, 6] -> conv 1x1 to 8 -> relu -> conv 3x3 -> relu ->
// conv 1x1 to 16 -> + x -> relu -> global average pool -> flatten -> gemm to 10 classes.
inline ir::Graph bottleneckWithHead(Weights& w) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kImages, 16, kSide, kSide});
  conv(g, w, "reduce", "x", "r", 16, 8, 1, 110);
  g.op("reduce_act", "relu", {{"src", "r"}}, {{"dst", "ra"}});
  conv(g, w, "spatial", "ra", "s", 8, 8, 3, 112);
  g.op("spatial_act", "relu", {{"src", "s"}}, {{"dst", "sa"}});
  conv(g, w, "expand", "sa", "e", 8, 16, 1, 114);
  g.op("residual", "elew", {{"src1", "e"}, {"src2", "x"}}, {{"dst", "sum"}}, {{"elew_op", "TL_SUM"}})
      .op("out_act", "relu", {{"src", "sum"}}, {{"dst", "o"}})
      .op("gap", "global_avgpool", {{"src", "o"}}, {{"dst", "pooled"}})
      .op("flat", "flatten", {{"src", "pooled"}}, {{"dst", "features"}}, {{"axis", 1}});
  w.add(g, "fc_w", {10, 16}, 116);
  w.add(g, "fc_b", {10}, 117, 1.0f);
  g.op("fc", "gemm", {{"a", "features"}, {"b", "fc_w"}, {"c", "fc_b"}}, {{"dst", "y"}},
       {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", false}, {"trans_b", true}})
      .output("y", "TL_FLOAT", {kImages, 10});
  return g.graph();
}

// MobileNetV2's inverted residual with EfficientNet's squeeze-excitation: x [2, 8, 6, 6] ->
// conv 1x1 to 16 -> relu6 -> depthwise 3x3 (16 groups) -> relu6 -> se = sigmoid(conv 1x1 to 16
// (relu(conv 1x1 to 4 (global average pool)))) -> * se -> conv 1x1 to 8 -> + x -> y.
inline ir::Graph invertedResidual(Weights& w) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kImages, 8, kSide, kSide});
  conv(g, w, "expand", "x", "e", 8, 16, 1, 120);
  g.op("expand_act", "clip", {{"src", "e"}}, {{"dst", "ea"}}, {{"min", 0.0}, {"max", 6.0}});
  conv(g, w, "depthwise", "ea", "d", 16, 16, 3, 122, 16);
  g.op("depthwise_act", "clip", {{"src", "d"}}, {{"dst", "da"}}, {{"min", 0.0}, {"max", 6.0}})
      .op("squeeze", "global_avgpool", {{"src", "da"}}, {{"dst", "sq"}});
  conv(g, w, "se_reduce", "sq", "sr", 16, 4, 1, 124);
  g.op("se_act", "relu", {{"src", "sr"}}, {{"dst", "sra"}});
  conv(g, w, "se_expand", "sra", "se", 4, 16, 1, 126);
  g.op("se_gate", "sigmoid", {{"src", "se"}}, {{"dst", "gate"}})
      .op("excite", "elew_bcast", {{"src1", "da"}, {"src2", "gate"}}, {{"dst", "ex"}}, {{"elew_op", "TL_MUL"}});
  conv(g, w, "project", "ex", "pr", 16, 8, 1, 128);
  g.op("residual", "elew", {{"src1", "pr"}, {"src2", "x"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}})
      .output("y", "TL_FLOAT", {kImages, 8, kSide, kSide});
  return g.graph();
}

// A ConvNeXt block: x [1, 16, 4, 4] -> depthwise 3x3 -> permute to channels last -> layernorm
// over the channels -> linear to 64 -> gelu -> linear to 16 -> permute back -> + x -> y. With
// `convAfter`, a depthwise 3x3 of x whose result a 1x1 conv reads is added to y as well.
inline ir::Graph convNextBlock(Weights& w, bool convAfter) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 16, 4, 4});
  conv(g, w, "dw", "x", "d", 16, 16, 3, 130, 16);
  g.op("to_last", "transpose", {{"src", "d"}}, {{"dst", "dl"}}, {{"axes", {0, 2, 3, 1}}});
  w.addBetween(g, "ln_scale", {16}, 131, 0.5f, 1.5f);
  w.add(g, "ln_bias", {16}, 132);
  w.add(g, "pw1", {16, 64}, 133);
  w.add(g, "pw2", {64, 16}, 134);
  g.op("ln", "layernorm", {{"src", "dl"}, {"scale", "ln_scale"}, {"bias", "ln_bias"}}, {{"dst", "n"}},
       {{"axis", 3}, {"epsilon", 1e-6}})
      .op("pw1_mm", "matmul", {{"src1", "n"}, {"src2", "pw1"}}, {{"dst", "h"}})
      .op("gelu", "unary", {{"src", "h"}}, {{"dst", "ha"}}, {{"func", "gelu"}, {"alpha", 0}, {"beta", 0}})
      .op("pw2_mm", "matmul", {{"src1", "ha"}, {"src2", "pw2"}}, {{"dst", "m"}})
      .op("to_first", "transpose", {{"src", "m"}}, {{"dst", "mf"}}, {{"axes", {0, 3, 1, 2}}})
      .op("residual", "elew", {{"src1", "mf"}, {"src2", "x"}}, {{"dst", convAfter ? "z" : "y"}},
          {{"elew_op", "TL_SUM"}});
  if (convAfter) {
    conv(g, w, "dw2", "x", "d2", 16, 16, 3, 135, 16);
    conv(g, w, "pw3", "d2", "p3", 16, 16, 1, 137);
    g.op("join", "elew", {{"src1", "z"}, {"src2", "p3"}}, {{"dst", "y"}}, {{"elew_op", "TL_SUM"}});
  }
  g.output("y", "TL_FLOAT", {1, 16, 4, 4});
  return g.graph();
}

// 1-D: x [2, 8, 10] -> conv (N-d) k=3 to 16 channels -> pad the length by 1 each side -> resize
// the length to 24 (nearest) -> conv (N-d) k=3 to 8 channels -> y [2, 8, 22].
inline ir::Graph sequenceConvs(Weights& w) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {kImages, 8, 10});
  w.add(g, "seq1_w", {16, 8, 3}, 140);
  w.add(g, "seq1_b", {16}, 141, 1.0f);
  w.add(g, "seq2_w", {8, 16, 3}, 142);
  w.add(g, "seq2_b", {8}, 143, 1.0f);
  const Json window{{"group", 1}, {"size", {3}}, {"stride", {1}}, {"dilation", {1}}, {"pads", {0, 0}}};
  g.op("seq1", "conv", {{"src", "x"}, {"weight", "seq1_w"}, {"bias", "seq1_b"}}, {{"dst", "c1"}}, window)
      .op("widen", "pad", {{"src", "c1"}}, {{"dst", "padded"}},
          {{"pads", {0, 0, 1, 0, 0, 1}}, {"mode", "edge"}, {"value", 0.0}})
      .op("stretch", "resize", {{"src", "padded"}}, {{"dst", "stretched"}},
          {{"mode", "TL_NEAREST"}, {"dims", {kImages, 16, 24}}})
      .op("seq2", "conv", {{"src", "stretched"}, {"weight", "seq2_w"}, {"bias", "seq2_b"}}, {{"dst", "y"}}, window)
      .output("y", "TL_FLOAT", {kImages, 8, 22});
  return g.graph();
}

}  // namespace qaic::compiler::partition::slicing_test
