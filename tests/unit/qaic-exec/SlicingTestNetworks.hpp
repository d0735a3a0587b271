// SPDX-License-Identifier: Apache-2.0
// The networks the tensor slicing tests split (an MLP, self-attention writing a retained KV
// cache, a transformer layer) and their weights file in memory: shared by the slicing test and
// the multi-device compile's pass test, so both split the same networks.
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
using kernels::test::randomFloats;

// The network's weights file, in memory.
class Weights {
 public:
  // A from_file constant `name` of random values, added to the graph.
  void add(GraphBuilder& g, const std::string& name, const ir::Dims& dims, uint32_t seed, float scale = 0.3f) {
    auto& values = values_[name];
    values = randomFloats(static_cast<std::size_t>(ir::elementCount(dims)), seed, -scale, scale);
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

}  // namespace qaic::compiler::partition::slicing_test
