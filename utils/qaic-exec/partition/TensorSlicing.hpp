// SPDX-License-Identifier: Apache-2.0
// Tensor slicing: one network split into N per-device graphs (the parts of a multi-device
// program), Megatron-style. A MatMul/Gemm with a constant weight whose input is whole keeps
// N/parts of the weight's columns on each part; one whose input arrives split along its
// reduction axis keeps the matching rows and sums the parts' products (all_reduce_sum). Every
// other op keeps a split operand split where its result can be computed slice by slice (element-
// wise ops, reshapes to and from heads, transposes, softmax over another axis, batched matmuls
// over the heads axis (matmul_trans_b and a float16 src2 too), a KV cache written with scatter_nd
// and read with gather_nd over its batch axes); the rest runs replicated, after an
// all_gather of any split operand. So the attention heads and the MLP's hidden units divide
// among the parts, and whatever cannot be divided stays correct, only replicated.
//
// Convolutions (conv2d, N-d conv; channels on axis 1) split the same way: a conv of a whole input
// keeps 1/parts of the output channels (weight and bias rows) on each part, a conv whose input
// arrives split along its channels keeps the matching input channels of the weight and sums the
// parts' results, the bias added by part 0 only. A grouped (depthwise) conv whose groups divide
// among the parts keeps its share of the groups. Channel-wise ops (batchnorm with its parameters
// split, pools, pad and resizes that leave the channels alone) and element-wise ops keep the
// channel split, so a network's convs alternate a column and a row split, one all_reduce_sum per
// pair, and a residual add slices its whole operand locally. A conv of a whole input is split
// only where its channels stay split up to a reader that takes them so (another conv, a product
// over them); else it stays whole rather than have its result gathered (ConvNeXt's convs, which
// a layernorm over the channels reads).
//
// A fused projection (one weight for q, k and v) whose result is only cut into equal groups
// keeps, on each part, its share of every group's columns, so each cut is that part's heads.
// Reshapes carry such groups too: [L, N, E] split on E viewed as [L, N*H, D] (the export of
// nn.MultiheadAttention) is split on N*H in N groups, each part its heads of every batch element.
//
// A value gathered for one reader is whole for every later one: a decomposed layer norm runs
// whole after its mean gathers the input, and the next projection starts with a column split.
//
// A retained-state pair (input X, output X_RetainedState) whose cache is written by heads keeps
// only its part's heads on each part: its io dims change on that axis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ir/Graph.hpp"
#include "ir/Weights.hpp"

namespace qaic::compiler::partition {

// The unsplit network's constants by name (a `create` op's dst with from_file=true).
using WeightLookup = std::function<const ir::WeightTensor*(std::string_view name)>;

struct SliceOptions {
  // A weight smaller than this stays whole (its matmul replicated): moving a small product
  // between devices costs more than computing it everywhere.
  uint64_t minWeightBytes = 0;
};

struct CollectiveTraffic {
  int collective = 0;
  std::string optype;  // all_reduce_sum or all_gather
  std::string op;      // its op's name in every part
  std::string tensor;  // the unsplit network's tensor it makes whole
  uint64_t bytes = 0;  // of its result, on each part, per inference
};

struct SliceReport {
  std::vector<std::string> split;       // each weight divided: op, weight, dims per part
  std::vector<std::string> replicated;  // what stayed whole where it might have been split, and why
  std::vector<uint64_t> weightBytes;    // by part: the constant bytes its graph reads
  std::vector<CollectiveTraffic> collectives;
  uint64_t collectiveBytes() const;  // per inference on each part, over every collective
  std::string text() const;          // the whole report, one line per entry
};

// The bytes of the weights' slices, shared by every walk over the same weights (each
// specialization's graph splits its weights alike, and the walk that finds the caches' splits
// cuts them too), so each slice is cut once. A slice that is one run of its weight's bytes (along
// the first axis that is not 1, in one group: a row split) is not copied but viewed where the
// weight lies, which the caller keeps alive (the unsplit network's owner).
class WeightSlices {
 public:
  // Part `part` of `parts` of plain row-major `weight` along `axis`: of each of the axis'
  // `groups` groups, its share.
  std::span<const std::byte> slice(const ir::WeightTensor& weight, std::size_t axis, std::size_t part,
                                   std::size_t parts, std::size_t groups);
  uint64_t copiedBytes() const { return copiedBytes_; }  // what the slices that are not views hold

 private:
  using Key = std::tuple<std::string, ir::DType, ir::Dims, std::size_t, std::size_t, std::size_t, std::size_t>;
  std::map<Key, std::vector<std::byte>> copies_;
  uint64_t copiedBytes_ = 0;
};

struct SlicedNetwork {
  std::vector<ir::Graph> parts;  // shape-inferred, collectives numbered 0, 1, ... in graph order
  // Part p's new constants (the weight slices) by the names its `create` ops give them,
  // "<weight>.part<p>of<N>"; any other constant a part reads is the unsplit network's.
  std::vector<std::vector<ir::WeightTensor>> weights;
  SliceReport report;
  std::shared_ptr<const void> storage;  // owns the slices' bytes (a WeightSlices)

  // Part `part`'s constant `name`: its slice, else the unsplit network's from `unsplit`.
  const ir::WeightTensor* findWeight(std::size_t part, std::string_view name, const WeightLookup& unsplit) const;
};

// What part `part` of `parts` sends to and receives from the other parts per inference over the
// collectives of its graph (shapes inferred), counted as kernels::PeerRendezvous counts them, so
// the compiler's figures are the emulator's: for an all_reduce_sum of B result bytes, a
// reduce-scatter then all-gather (its own chunk of B/N elements from every other part, and every
// other chunk back: about 2(N-1)/N x B each way); for an all_gather, its slice to every other
// part and theirs to it ((N-1) x its slice each way). Its own share never counts.
struct PeerTraffic {
  uint64_t sent = 0;
  uint64_t received = 0;
};
PeerTraffic peerTraffic(const ir::Graph& part, std::size_t partIndex, std::size_t parts);

// Splits `graph` (its shapes inferred or not) into `parts` graphs, its slices cut into `slices`
// (shared with the other specializations of the same weights; a store of its own when null).
// Throws ir::IrError for a graph that does not validate, and std::invalid_argument for
// parts == 0.
SlicedNetwork sliceTensors(const ir::Graph& graph, std::size_t parts, const WeightLookup& weights,
                           const SliceOptions& options = {}, std::shared_ptr<WeightSlices> slices = nullptr);

}  // namespace qaic::compiler::partition
