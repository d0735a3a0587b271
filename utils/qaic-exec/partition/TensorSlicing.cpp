// SPDX-License-Identifier: Apache-2.0
// The split walks the network once in graph order, keeping for each of its tensors how the
// parts hold it: whole on every part (replicated), or each part its slice along one axis. Each
// op's rule either computes its result slice by slice from split operands (turning a whole
// operand into slices where needed: a weight's slices become new constants, anything else a
// local `slice`, no traffic) or makes its split operands whole with all_gather and runs
// replicated. A retained cache is only known to be written by heads once its scatter_nd is
// reached, so a first walk finds such caches and a second one starts with them split.
#include "partition/TensorSlicing.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "RetainedState.hpp"
#include "kernels/mx/Mxint8Format.hpp"

namespace qaic::compiler::partition {
namespace {

using Names = std::vector<std::string>;  // one tensor's name in each part

// How the parts hold one of the unsplit network's tensors.
struct Value {
  Names names;
  int axis = -1;  // -1: whole on every part
  // The axis as `groups` equal groups (a fused projection's q, k and v columns), each divided
  // among the parts: part p holds the p-th share of every group, in group order. 1: one run.
  int64_t groups = 1;
};

int64_t product(const ir::Dims& dims, std::size_t begin, std::size_t end) {
  int64_t p = 1;
  for (std::size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

std::string formatDims(const ir::Dims& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

void setParam(ir::Op& op, std::string_view name, ir::ParamValue value) {
  for (auto& p : op.params) {
    if (p.argName == name) {
      p.value = std::move(value);
      return;
    }
  }
  op.params.push_back({std::string(name), std::move(value)});
}

ir::Op makeOp(std::string name, std::string optype, std::vector<ir::TensorArg> inputs,
              std::vector<ir::TensorArg> outputs, std::vector<ir::Param> params) {
  return ir::Op{std::move(name), std::move(optype), std::move(inputs), std::move(outputs), std::move(params)};
}

std::vector<double> doubles(const ir::Dims& dims) { return {dims.begin(), dims.end()}; }

class Slicer {
 public:
  Slicer(const ir::Graph& graph, std::size_t parts, const WeightLookup& weights, const SliceOptions& options,
         const std::map<std::string, int>& retainedSplits, std::shared_ptr<WeightSlices> slices)
      : graph_(graph), parts_(parts), weights_(weights), options_(options), slices_(std::move(slices)) {
    for (const ir::Op& op : graph_.ops) {
      opNames_.insert(op.name);
      for (const auto& t : op.outputs) producers_[t.name] = &op;
      for (const auto& t : op.inputs) readers_[t.name].push_back(&op);
    }
    for (const auto& [name, info] : graph_.tensors) tensorNames_.insert(name);
    for (const auto& [name, info] : graph_.tensors) values_[name] = Value{Names(parts_, name), -1};
    for (const auto& [tensor, axis] : retainedSplits) values_[tensor].axis = axis;
    out_.assign(parts_, graph_);
    for (auto& g : out_) {
      g.ops.clear();
      g.tensors.clear();
    }
    result_.weights.resize(parts_);
  }

  // Tensors of retained inputs some op wanted split, with the axis it wanted.
  const std::map<std::string, int>& wishes() const { return wishes_; }

  SlicedNetwork run() {
    for (const ir::Op& op : graph_.ops) process(op);
    finishOutputs();
    for (auto& g : out_) removeDeadOps(g);
    renumberCollectives();
    result_.parts = std::move(out_);
    for (auto& g : result_.parts) ir::inferShapes(g);
    result_.storage = slices_;
    report();
    return std::move(result_);
  }

 private:
  // ---- names and emission -------------------------------------------------------------------
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int n = 1; tensorNames_.count(name); ++n) name = base + "." + std::to_string(n);
    tensorNames_.insert(name);
    return name;
  }
  std::string freshOp(const std::string& base) {
    std::string name = base;
    for (int n = 1; opNames_.count(name); ++n) name = base + "." + std::to_string(n);
    opNames_.insert(name);
    return name;
  }
  template <typename F>
  void emit(F perPart) {
    for (std::size_t p = 0; p < parts_; ++p) out_[p].ops.push_back(perPart(p));
  }
  // `op` with its inputs (in op.inputs order) named per part, each part's copy adjusted by tweak.
  void emitWith(const ir::Op& op, const std::vector<Names>& inputs,
                const std::function<void(ir::Op&, std::size_t)>& tweak = nullptr) {
    emit([&](std::size_t p) {
      ir::Op copy = op;
      for (std::size_t i = 0; i < copy.inputs.size(); ++i) copy.inputs[i].name = inputs[i][p];
      if (tweak) tweak(copy, p);
      return copy;
    });
  }
  void setOutputs(const ir::Op& op, int axis, int64_t groups = 1) {
    for (const auto& t : op.outputs) values_[t.name] = Value{Names(parts_, t.name), axis, groups};
  }

  const ir::Dims& dims(const std::string& t) const { return graph_.tensors.at(t).dims; }
  int rank(const std::string& t) const { return static_cast<int>(dims(t).size()); }
  const std::string& in(const ir::Op& op, std::string_view arg) const { return op.findInput(arg)->name; }
  bool divisible(int64_t extent) const {
    return extent >= static_cast<int64_t>(parts_) && extent % static_cast<int64_t>(parts_) == 0;
  }
  bool isConstant(const std::string& t) const {
    auto it = producers_.find(t);
    return it != producers_.end() && (it->second->optype == "create" || it->second->optype == "zeros");
  }
  const ir::IoBuffer* retainedInput(const std::string& t) const {
    for (const auto& io : graph_.io) {
      if (io.direction != ir::Direction::In || io.tensor != t) continue;
      for (const auto& other : graph_.io) {
        if (other.direction == ir::Direction::Out &&
            other.bufferName == io.bufferName + std::string(kRetainedStateSuffix))
          return &io;
      }
    }
    return nullptr;
  }

  // ---- layout changes -----------------------------------------------------------------------
  // The whole tensor on every part (an all_gather when it is split).
  Names whole(const std::string& t) {
    const Value& v = values_.at(t);
    if (v.axis < 0) return v.names;
    const std::string out = fresh(t + ".gathered");
    const std::string opName = freshOp(t + ".all_gather");
    const int id = nextCollective_++;
    const Names src = v.names;
    const int axis = v.axis;
    emit([&](std::size_t p) {
      return makeOp(opName, "all_gather", {{"src", src[p]}}, {{"dst", out}},
                    {{"axis", double(axis)}, {"collective", double(id)}, {"parts", double(parts_)}});
    });
    collectiveTensors_[opName] = t;
    const Names gathered(parts_, v.groups > 1 ? ungroup(t, out, axis, v.groups) : out);
    // Once gathered, every later reader takes the whole tensor: what one reader needed whole
    // (a layer norm's mean over the split axis) its neighbours then compute whole too, at no
    // further traffic, rather than carrying the split on to another gather.
    values_[t] = Value{gathered, -1};
    return gathered;
  }

  // The parts' grouped shares gathered in part order (`gathered`) put back in the tensor's own
  // order along `axis`: a gather at the inverse permutation, the same on every part.
  std::string ungroup(const std::string& t, const std::string& gathered, int axis, int64_t groups) {
    const int64_t extent = dims(t)[static_cast<std::size_t>(axis)];
    const int64_t share = extent / groups / static_cast<int64_t>(parts_);
    std::vector<double> order;  // the position in `gathered` of each element of t along the axis
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t p = 0; p < static_cast<int64_t>(parts_); ++p) {
        for (int64_t i = 0; i < share; ++i) order.push_back(double((p * groups + g) * share + i));
      }
    }
    const std::string indices = fresh(t + ".order"), out = fresh(t + ".ungrouped");
    const std::string orderOp = freshOp(t + ".order"), gatherOp = freshOp(t + ".ungroup");
    emit([&](std::size_t) {
      return makeOp(orderOp, "create", {}, {{"dst", indices}},
                    {{"dtype", std::string("TL_INT64")},
                     {"dims", std::vector<double>{double(extent)}},
                     {"ran", std::vector<double>{0, 0}},
                     {"data", order},
                     {"from_file", false}});
    });
    emit([&](std::size_t) {
      return makeOp(gatherOp, "gather", {{"src", gathered}, {"indices", indices}}, {{"dst", out}},
                    {{"axis", double(axis)}});
    });
    return out;
  }

  // `names` (whole tensor `t`) cut locally along `axis`: each part takes its slice, or with
  // `groups`, its share of every group (a gather at its own indices).
  Names sliceLocally(const std::string& t, const Names& names, int axis, int64_t groups = 1) {
    const int64_t extent = dims(t)[static_cast<std::size_t>(axis)];
    const int64_t share = extent / groups / static_cast<int64_t>(parts_);
    const std::string out = fresh(t + ".slice" + std::to_string(axis));
    const std::string opName = freshOp(t + ".slice" + std::to_string(axis));
    if (groups == 1) {
      emit([&](std::size_t p) {
        return makeOp(
            opName, "slice", {{"src", names[p]}}, {{"dst", out}},
            {{"axis", double(axis)}, {"start", double(share * static_cast<int64_t>(p))}, {"len", double(share)}});
      });
      return Names(parts_, out);
    }
    const std::string indices = fresh(t + ".share" + std::to_string(axis));
    const std::string indicesOp = freshOp(t + ".share" + std::to_string(axis));
    emit([&](std::size_t p) {
      std::vector<double> rows;
      for (int64_t g = 0; g < groups; ++g) {
        for (int64_t i = 0; i < share; ++i) rows.push_back(double(g * (extent / groups) + int64_t(p) * share + i));
      }
      return makeOp(indicesOp, "create", {}, {{"dst", indices}},
                    {{"dtype", std::string("TL_INT64")},
                     {"dims", std::vector<double>{double(rows.size())}},
                     {"ran", std::vector<double>{0, 0}},
                     {"data", rows},
                     {"from_file", false}});
    });
    emit([&](std::size_t p) {
      return makeOp(opName, "gather", {{"src", names[p]}, {"indices", indices}}, {{"dst", out}},
                    {{"axis", double(axis)}});
    });
    return Names(parts_, out);
  }

  // Whole tensor `t` held split along `axis`; nullopt when the axis does not divide. A weight
  // from the weights file becomes one new constant per part; anything else is sliced locally.
  std::optional<Names> split(const std::string& t, int axis, int64_t groups = 1) {
    const Value& v = values_.at(t);
    if (v.axis == axis && v.groups == groups) return v.names;
    if (v.axis >= 0 || axis < 0 || axis >= rank(t) || dims(t)[static_cast<std::size_t>(axis)] % groups != 0 ||
        !divisible(dims(t)[static_cast<std::size_t>(axis)] / groups)) {
      return std::nullopt;
    }
    const auto key = std::make_tuple(t, axis, groups);
    if (auto it = splits_.find(key); it != splits_.end()) return it->second;
    if (retainedInput(t) && groups == 1) wishes_.emplace(t, axis);
    Names names;
    const ir::Op* producer = producers_.count(t) ? producers_.at(t) : nullptr;
    const ir::WeightTensor* weight = nullptr;
    if (producer && producer->optype == "create" && producer->boolean("from_file") && weights_) weight = weights_(t);
    if (weight && weight->encoding == ir::WeightEncoding::Plain && weight->dims == dims(t) &&
        weight->data.size() ==
            static_cast<std::size_t>(ir::elementCount(weight->dims)) * ir::dtypeSize(weight->dtype)) {
      ir::Dims partDims = dims(t);
      partDims[static_cast<std::size_t>(axis)] /= static_cast<int64_t>(parts_);
      for (std::size_t p = 0; p < parts_; ++p) {
        const std::string name = fresh(t + ".part" + std::to_string(p) + "of" + std::to_string(parts_));
        const auto bytes = slices_->slice(*weight, static_cast<std::size_t>(axis), p, parts_,
                                          static_cast<std::size_t>(groups));
        result_.weights[p].push_back({name, weight->dtype, partDims, bytes, ir::WeightEncoding::Plain, 0});
        ir::Op create = *producer;
        create.name = freshOp(producer->name + ".part" + std::to_string(p));
        create.outputs[0].name = name;
        setParam(create, "dims", doubles(partDims));
        out_[p].ops.push_back(std::move(create));
        names.push_back(name);
      }
    } else {
      names = sliceLocally(t, v.names, axis, groups);
    }
    splits_[key] = names;
    return names;
  }

  // ---- the rules ----------------------------------------------------------------------------
  void process(const ir::Op& op) {
    bool anySplit = false, grouped = false;
    for (const auto& t : op.inputs) {
      anySplit = anySplit || values_.at(t.name).axis >= 0;
      grouped = grouped || values_.at(t.name).groups > 1;
    }
    const std::string& type = op.optype;
    bool done = false;
    if (grouped && !keepsGroups(type)) {
      replicate(op);
      return;
    }
    if (grouped && (type == "slice" || type == "strided_slice")) {
      done = cutGroup(op);
    } else if (type == "matmul") {
      done = matmul(op);
    } else if (type == "matmul_trans_b") {
      done = batchedMatmul(op, true);
    } else if (type == "gemm") {
      done = gemm(op);
    } else if (type == "conv2d" || type == "conv") {
      done = conv(op);
    } else if (!anySplit) {
      done = false;
    } else if (sameShapeUnary(type)) {
      done = same(op, values_.at(op.inputs[0].name).axis);
    } else if (type == "softmax" || type == "log_softmax") {
      const int axis = values_.at(op.inputs[0].name).axis;
      done = axis != op.integer("axis") && same(op, axis);
    } else if (type == "layernorm") {
      const Value& v = values_.at(in(op, "src"));
      if (v.axis < op.integer("axis")) {
        const int axis = v.axis;
        const int64_t groups = v.groups;
        emitWith(op, {v.names, whole(in(op, "scale")), whole(in(op, "bias"))});
        setOutputs(op, axis, groups);
        done = true;
      }
    } else if (type == "elew" || type == "elew_bcast" || type == "compare" || type == "logical" || type == "where") {
      done = broadcast(op, -1);
    } else if (type == "concat") {
      done = broadcast(op, static_cast<int>(op.integer("axis")));
    } else if (type == "reshape" || type == "flatten") {
      done = reshape(op);
    } else if (type == "transpose") {
      const int axis = values_.at(op.inputs[0].name).axis;
      const auto axes = op.integers("axes");
      const int to = static_cast<int>(std::find(axes.begin(), axes.end(), axis) - axes.begin());
      done = same(op, to);
    } else if (type == "slice") {
      const int axis = values_.at(op.inputs[0].name).axis;
      done = axis != op.integer("axis") && same(op, axis);
    } else if (type == "strided_slice") {
      done = stridedSlice(op);
    } else if (type == "reduce") {
      done = reduce(op);
    } else if (type == "gather") {
      done = gather(op);
    } else if (type == "scatter_nd") {
      done = scatterNd(op);
    } else if (type == "gather_nd") {
      done = gatherNd(op);
    } else if (type == "matmul_gathered_b") {
      done = gatheredMatmul(op);
    } else if (channelWiseType(type)) {
      done = channelWise(op);
    }
    if (!done) replicate(op);
  }

  // Ops whose rules keep an axis held in groups (a fused projection's q, k and v; the heads of
  // every batch element once [L, N, E] becomes [L, N*H, D]) as groups: they never mix elements
  // along that axis, or (slices) cut whole groups out of it.
  static bool keepsGroups(const std::string& type) {
    static const std::set<std::string> kinds = {
        "relu",      "lrelu",     "sigmoid",    "clip",          "unary",   "cast",   "softmax",        "log_softmax",
        "layernorm", "elew",      "elew_bcast", "compare",       "logical", "where",  "concat",         "reshape",
        "flatten",   "transpose", "slice",      "strided_slice", "reduce",  "matmul", "matmul_trans_b", "gemm"};
    return kinds.count(type) > 0;
  }

  // Every operand whole, the op as it is, its results whole.
  void replicate(const ir::Op& op) {
    std::vector<Names> inputs;
    for (const auto& t : op.inputs) inputs.push_back(whole(t.name));
    emitWith(op, inputs);
    setOutputs(op, -1);
  }

  // One split operand (the first input), the result split along `axis` (in its groups); the
  // rest whole.
  bool same(const ir::Op& op, int axis) {
    const Value& first = values_.at(op.inputs[0].name);
    const Names src = first.names;
    const int64_t groups = first.groups;
    std::vector<Names> inputs{src};
    for (std::size_t i = 1; i < op.inputs.size(); ++i) inputs.push_back(whole(op.inputs[i].name));
    emitWith(op, inputs);
    setOutputs(op, axis, groups);
    return true;
  }

  // A slice or strided_slice of one whole group of a grouped tensor (q out of a fused qkv): on
  // each part, its share of that group, the result split in one run. A cut along another axis
  // keeps the groups.
  bool cutGroup(const ir::Op& op) {
    const Value& v = values_.at(op.inputs[0].name);
    const auto a = static_cast<std::size_t>(v.axis);
    const auto cut = cutAlong(op, v.axis);
    const int64_t extent = dims(op.inputs[0].name)[a], group = extent / v.groups;
    if (!cut) return op.optype == "slice" && op.integer("axis") != v.axis && same(op, v.axis);
    if (op.optype == "strided_slice" && cut->first == 0 && cut->second == extent) return stridedSlice(op);
    const int64_t share = group / static_cast<int64_t>(parts_);
    const auto [start, len] = *cut;
    if (len != group || start % group != 0) return false;
    const int64_t partStart = start / group * share;
    emitWith(op, {v.names}, [&](ir::Op& copy, std::size_t) {
      if (copy.optype == "slice") {
        setParam(copy, "start", double(partStart));
        setParam(copy, "len", double(share));
        return;
      }
      auto starts = copy.integers("starts"), ends = copy.integers("ends");
      starts[a] = partStart;
      ends[a] = partStart + share;
      setParam(copy, "starts", std::vector<double>(starts.begin(), starts.end()));
      setParam(copy, "ends", std::vector<double>(ends.begin(), ends.end()));
    });
    setOutputs(op, v.axis);
    return true;
  }

  // (start, length) of what a slice or a unit-step strided_slice keeps along `axis`.
  static std::optional<std::pair<int64_t, int64_t>> cutAlong(const ir::Op& op, int axis) {
    if (op.optype == "slice") {
      if (op.integer("axis") != axis) return std::nullopt;
      return std::make_pair(op.integer("start"), op.integer("len"));
    }
    if (op.optype != "strided_slice") return std::nullopt;
    const auto a = static_cast<std::size_t>(axis);
    const auto starts = op.integers("starts"), ends = op.integers("ends"), steps = op.integers("steps");
    if (a >= steps.size() || steps[a] != 1 || ends[a] <= starts[a]) return std::nullopt;
    return std::make_pair(starts[a], ends[a] - starts[a]);
  }

  // How many equal groups a projection's result `t` holds along `axis`, judged by its readers:
  // when (through element-wise ops, a bias added) it is only ever cut into groups of one length
  // that divides among the parts (q, k and v of a fused qkv), that many; else 1. Split by
  // groups, each part then holds its heads of every group rather than a run of columns.
  int64_t fusedGroups(const std::string& t, int axis) const {
    auto it = readers_.find(t);
    if (it == readers_.end() || it->second.empty()) return 1;
    for (const auto& io : graph_.io) {
      if (io.direction == ir::Direction::Out && io.tensor == t) return 1;
    }
    const int64_t extent = dims(t)[static_cast<std::size_t>(axis)];
    int64_t length = 0;
    bool cuts = true;
    for (const ir::Op* reader : it->second) {
      const auto cut = cutAlong(*reader, axis);
      if (!cut || (length != 0 && cut->second != length) || cut->first % cut->second != 0) {
        cuts = false;
        break;
      }
      length = cut->second;
    }
    if (cuts) return length < extent && extent % length == 0 && divisible(length) ? extent / length : 1;
    const ir::Op& reader = *it->second.front();
    if (it->second.size() != 1 || (reader.optype != "elew" && reader.optype != "elew_bcast")) return 1;
    const std::string& out = reader.outputs[0].name;
    return fusedGroups(out, axis + rank(out) - rank(t));
  }

  // Element-wise with NumPy broadcasting (and concat, whose `exclude` axis may not be split):
  // the result is split along the axis its split operands share; a whole operand that spans
  // that axis is sliced locally, one that broadcasts along it is used as it is.
  bool broadcast(const ir::Op& op, int exclude) {
    const int outRank = rank(op.outputs[0].name);
    int outAxis = -1;
    int64_t groups = 0;
    for (const auto& t : op.inputs) {
      const Value& v = values_.at(t.name);
      if (v.axis < 0) continue;
      const int o = v.axis + outRank - rank(t.name);
      if ((outAxis >= 0 && o != outAxis) || (groups != 0 && v.groups != groups)) return false;
      outAxis = o;
      groups = v.groups;
    }
    if (outAxis < 0 || outAxis == exclude) return false;
    const int64_t full = dims(op.outputs[0].name)[static_cast<std::size_t>(outAxis)];
    std::vector<Names> inputs;
    for (const auto& t : op.inputs) {
      const Value& v = values_.at(t.name);
      const int i = outAxis - (outRank - rank(t.name));
      if (v.axis >= 0 || i < 0 || dims(t.name)[static_cast<std::size_t>(i)] == 1) {
        inputs.push_back(v.axis >= 0 ? v.names : whole(t.name));
        continue;
      }
      if (dims(t.name)[static_cast<std::size_t>(i)] != full) return false;
      auto names = split(t.name, i, groups);
      if (!names) return false;
      inputs.push_back(*names);
    }
    emitWith(op, inputs);
    setOutputs(op, outAxis, groups);
    return true;
  }

  // A reshape keeps the split when each part's elements stay one run per outer position: the
  // split axis holds, at each of `outer` positions (its axes before, times its groups), k
  // elements of which each part has k/N, each followed by `inner` elements. The result keeps it
  // on an axis b whose axes before it, times the groups b splits into, make the same `outer`,
  // and whose share of one group times what follows it is k * inner again. [B, S, H*D] split on
  // H*D <-> [B, S, H, D] split on H; [L, N, E] split on E -> [L, N*H, D] split on N*H in N groups
  // (each part its heads of every batch element, nn.MultiheadAttention's layout), and back.
  // The axis (and its groups) of `to` that holds a split of `from` along `axis` in `groups` after
  // a reshape, by the rule above; nullopt when no axis does.
  std::optional<std::pair<int, int64_t>> reshapedSplit(const ir::Dims& from, int axis, int64_t groups,
                                                       const ir::Dims& to) const {
    const auto a = static_cast<std::size_t>(axis);
    const int64_t outer = product(from, 0, a) * groups;
    const int64_t run = from[a] / groups * product(from, a + 1, from.size());
    for (std::size_t b = 0; b < to.size(); ++b) {
      const int64_t before = product(to, 0, b);
      if (before == 0 || outer % before != 0 || to[b] % (outer / before) != 0) continue;
      const int64_t share = to[b] / (outer / before);
      if (share * product(to, b + 1, to.size()) == run && divisible(share))
        return std::make_pair(static_cast<int>(b), outer / before);
    }
    return std::nullopt;
  }

  bool reshape(const ir::Op& op) {
    const Value& v = values_.at(op.inputs[0].name);
    const ir::Dims& to = dims(op.outputs[0].name);
    const auto result = reshapedSplit(dims(op.inputs[0].name), v.axis, v.groups, to);
    if (!result) return false;
    const auto [axis, groups] = *result;
    ir::Dims partDims = to;
    partDims[static_cast<std::size_t>(axis)] /= static_cast<int64_t>(parts_);
    emitWith(op, {v.names}, [&](ir::Op& copy, std::size_t) {
      if (copy.optype == "reshape") setParam(copy, "dims", doubles(partDims));
    });
    setOutputs(op, axis, groups);
    return true;
  }

  bool stridedSlice(const ir::Op& op) {
    const Value& v = values_.at(op.inputs[0].name);
    const auto a = static_cast<std::size_t>(v.axis);
    const auto starts = op.integers("starts"), ends = op.integers("ends"), steps = op.integers("steps");
    const int64_t extent = dims(op.inputs[0].name)[a];
    if (starts[a] != 0 || ends[a] != extent || steps[a] != 1) return false;
    emitWith(op, {v.names}, [&](ir::Op& copy, std::size_t) {
      std::vector<double> partEnds(ends.begin(), ends.end());
      partEnds[a] = double(extent / static_cast<int64_t>(parts_));
      setParam(copy, "ends", partEnds);
    });
    setOutputs(op, v.axis, v.groups);
    return true;
  }

  bool reduce(const ir::Op& op) {
    const int axis = values_.at(op.inputs[0].name).axis;
    const auto axes = op.integers("axes");
    if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return false;
    int to = axis;
    if (!op.boolean("keepdims"))
      to -= static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int64_t x) { return x < axis; }));
    return same(op, to);
  }

  // An embedding lookup: whole table, split indices -> the rows of each part's indices.
  bool gather(const ir::Op& op) {
    const Value& src = values_.at(in(op, "src"));
    const Value& indices = values_.at(in(op, "indices"));
    const int axis = static_cast<int>(op.integer("axis"));
    if (src.axis < 0 && indices.axis >= 0) {
      emitWith(op, {src.names, indices.names});
      setOutputs(op, axis + indices.axis);
      return true;
    }
    if (src.axis >= 0 && src.axis != axis && indices.axis < 0) {
      emitWith(op, {src.names, indices.names});
      setOutputs(op, src.axis < axis ? src.axis : src.axis + rank(in(op, "indices")) - 1);
      return true;
    }
    return false;
  }

  // scatter_nd(src, indices [..., t], updates). Split along an axis the index tuples address
  // (a KV cache [B, H, C, D] written by heads: tuples (b, h, position)), each part keeps its
  // updates' rows and their index tuples, less its first head on that component. That assumes
  // the tuples of an update row address the row's own position on the split axis, as the
  // index_put over (batch, head, position) that exports a cache write does. Split along a
  // trailing axis no tuple addresses, the tuples stay whole.
  bool scatterNd(const ir::Op& op) {
    const std::string &src = in(op, "src"), &indices = in(op, "indices"), &updates = in(op, "updates");
    const int t = static_cast<int>(dims(indices).back());
    const int rows = rank(indices) - 1;  // the updates' leading axes, one per index tuple
    int axis = values_.at(src).axis;
    const int updatesAxis = values_.at(updates).axis;
    if (axis < 0) {
      if (updatesAxis < 0) return false;
      axis = updatesAxis < rows ? updatesAxis : t + (updatesAxis - rows);
      if (updatesAxis < rows && (axis >= t || dims(src)[static_cast<std::size_t>(axis)] !=
                                                  dims(updates)[static_cast<std::size_t>(updatesAxis)]))
        return false;
    }
    if (values_.at(indices).axis >= 0) return false;
    const int wantedUpdates = axis < t ? axis : rows + (axis - t);
    if (axis < t && (wantedUpdates >= rows || dims(src)[static_cast<std::size_t>(axis)] !=
                                                  dims(updates)[static_cast<std::size_t>(wantedUpdates)]))
      return false;
    auto srcNames = split(src, axis);
    auto updateNames = split(updates, wantedUpdates);
    if (!srcNames || !updateNames) return false;
    Names indexNames = values_.at(indices).names;
    if (axis < t) {
      auto rowsOfPart = split(indices, wantedUpdates);
      if (!rowsOfPart) return false;
      const auto key = std::make_pair(indices, axis);
      if (auto it = rebased_.find(key); it != rebased_.end()) {
        emitWith(op, {*srcNames, it->second, *updateNames});
        setOutputs(op, axis);
        return true;
      }
      const ir::DType type = graph_.tensors.at(indices).dtype;
      const int64_t share = dims(src)[static_cast<std::size_t>(axis)] / static_cast<int64_t>(parts_);
      const std::string offset = fresh(indices + ".offset");
      const std::string rebased = fresh(indices + ".rebased");
      const std::string offsetOp = freshOp(op.name + ".offset"), rebaseOp = freshOp(op.name + ".rebase");
      emit([&](std::size_t p) {
        std::vector<double> data(static_cast<std::size_t>(t), 0.0);
        data[static_cast<std::size_t>(axis)] = double(share * static_cast<int64_t>(p));
        return makeOp(offsetOp, "create", {}, {{"dst", offset}},
                      {{"dtype", std::string(ir::dtypeName(type))},
                       {"dims", std::vector<double>{double(t)}},
                       {"ran", std::vector<double>{0, 0}},
                       {"data", data},
                       {"from_file", false}});
      });
      emit([&](std::size_t p) {
        return makeOp(rebaseOp, "elew_bcast", {{"src1", (*rowsOfPart)[p]}, {"src2", offset}}, {{"dst", rebased}},
                      {{"elew_op", std::string("TL_SUB")}});
      });
      indexNames = Names(parts_, rebased);
      rebased_[key] = indexNames;
    }
    emitWith(op, {*srcNames, indexNames, *updateNames});
    setOutputs(op, axis);
    return true;
  }

  // gather_nd over batch axes (efficient-transformers' cache read: GatherND with batch_dims 2 of
  // a cache [B, H, C, D] at indices [B, H, n, 1]): split along a batch axis, each part gathers
  // from its heads with its heads' index rows, which address positions only, so stay as they are.
  bool gatherNd(const ir::Op& op) {
    const std::string &src = in(op, "src"), &indices = in(op, "indices");
    const int srcAxis = values_.at(src).axis, indicesAxis = values_.at(indices).axis;
    if (srcAxis >= 0 && indicesAxis >= 0 && srcAxis != indicesAxis) return false;
    const int axis = srcAxis >= 0 ? srcAxis : indicesAxis;
    if (axis < 0 || axis >= op.integer("batch_dims")) return false;
    auto srcNames = split(src, axis);
    auto indexNames = split(indices, axis);
    if (!srcNames || !indexNames) return false;
    emitWith(op, {*srcNames, *indexNames});
    setOutputs(op, axis);
    return true;
  }

  // matmul_gathered_b (attention reading a float16 cache where it lies, cast-placement's fold of
  // the cache's gather_nd into its product): split along a batch axis (the heads) that src1, the
  // cache and its indices share; each part multiplies its heads with its heads' positions.
  bool gatheredMatmul(const ir::Op& op) {
    const std::string &a = in(op, "src1"), &b = in(op, "src2"), &indices = in(op, "indices");
    const int r = rank(b);
    if (rank(a) != r || rank(indices) != r) return false;
    int axis = -1;
    for (const std::string* t : {&a, &b, &indices}) {
      const int x = values_.at(*t).axis;
      if (x < 0) continue;
      if (x >= r - 2 || (axis >= 0 && x != axis)) return false;
      axis = x;
    }
    if (axis < 0) return false;
    std::vector<Names> inputs;
    for (const std::string* t : {&a, &b, &indices}) {
      const Value& v = values_.at(*t);
      if (v.axis >= 0 || dims(*t)[static_cast<std::size_t>(axis)] == 1) {
        inputs.push_back(v.axis >= 0 ? v.names : whole(*t));
        continue;
      }
      auto names = split(*t, axis);
      if (!names) return false;
      inputs.push_back(*names);
    }
    emitWith(op, inputs);
    setOutputs(op, axis);
    return true;
  }

  bool eligibleWeight(const ir::Op& op, const std::string& weight, int64_t columns) {
    const uint64_t bytes = static_cast<uint64_t>(ir::elementCount(dims(weight))) *
                           ir::dtypeSize(graph_.tensors.at(weight).dtype);
    std::string why;
    if (!divisible(columns)) {
      why = std::to_string(columns) + " columns do not divide among " + std::to_string(parts_) + " parts";
    } else if (bytes < options_.minWeightBytes) {
      why = std::to_string(bytes) + " bytes, below the " + std::to_string(options_.minWeightBytes) + "-byte minimum";
    }
    if (why.empty()) return true;
    result_.report.replicated.push_back(op.optype + " '" + op.name + "': weight '" + weight + "' " +
                                        formatDims(dims(weight)) + " stays whole: " + why);
    return false;
  }

  static std::string columnSplit(int64_t groups) {
    return groups > 1 ? "column split in " + std::to_string(groups) + " fused groups" : "column split";
  }

  void noteSplit(const ir::Op& op, const std::string& weight, int axis, const std::string& how) {
    ir::Dims part = dims(weight);
    part[static_cast<std::size_t>(axis)] /= static_cast<int64_t>(parts_);
    result_.report.split.push_back(op.optype + " '" + op.name + "': " + how + " of weight '" + weight + "' " +
                                   formatDims(dims(weight)) + " -> " + formatDims(part) + " per part");
  }

  // The op's product summed over the parts into its dst: each part computes `perPart` into a
  // partial result, then all_reduce_sum.
  void emitPartialSum(const ir::Op& op, const std::function<ir::Op(std::size_t)>& perPart) {
    const std::string& dst = op.outputs[0].name;
    const std::string partial = fresh(dst + ".partial");
    emit([&](std::size_t p) {
      ir::Op copy = perPart(p);
      copy.outputs[0].name = partial;
      return copy;
    });
    const std::string opName = freshOp(op.name + ".all_reduce_sum");
    const int id = nextCollective_++;
    emit([&](std::size_t) {
      return makeOp(opName, "all_reduce_sum", {{"src", partial}}, {{"dst", dst}},
                    {{"collective", double(id)}, {"parts", double(parts_)}});
    });
    collectiveTensors_[opName] = dst;
    setOutputs(op, -1);
  }

  bool matmul(const ir::Op& op) {
    const std::string &a = in(op, "src1"), &b = in(op, "src2");
    const Value &va = values_.at(a), &vb = values_.at(b);
    const int ra = rank(a), rb = rank(b);
    if (isConstant(b) && rb == 2 && ra >= 2 && vb.axis < 0) {
      if (va.axis == ra - 1) {  // the reduction axis arrives split: row split, then a sum
        if (auto w = split(b, 0, va.groups)) {
          noteSplit(op, b, 0, "row split");
          const Names src1 = va.names;
          emitPartialSum(op, [&](std::size_t p) {
            ir::Op copy = op;
            copy.inputs[0].name = src1[p];
            copy.inputs[1].name = (*w)[p];
            return copy;
          });
          return true;
        }
        return false;
      }
      if (va.axis < 0) {
        if (eligibleWeight(op, b, dims(b)[1])) {
          const int last = rank(op.outputs[0].name) - 1;
          const int64_t groups = fusedGroups(op.outputs[0].name, last);
          if (auto w = split(b, 1, groups)) {
            noteSplit(op, b, 1, columnSplit(groups));
            emitWith(op, {va.names, *w});
            setOutputs(op, last, groups);
            return true;
          }
        }
        replicate(op);
        return true;
      }
      // Split along a row or batch axis: each part multiplies its rows by the whole weight.
      const int axis = va.axis;
      const int64_t groups = va.groups;
      emitWith(op, {va.names, vb.names});
      setOutputs(op, axis, groups);
      return true;
    }
    return batchedMatmul(op, false);
  }

  // Two computed operands: split along a batch axis both share (the heads of attention), or A
  // along its rows, or B along its columns, with the other whole. With `transB`
  // (matmul_trans_b, attention's scores over a float16 cache) B is [.., N, K]: its columns are
  // its second last axis and the reduction its last.
  bool batchedMatmul(const ir::Op& op, bool transB) {
    const std::string &a = in(op, "src1"), &b = in(op, "src2");
    const int ra = rank(a), rb = rank(b);
    if (ra < 2 || rb < 2) return false;
    const int outRank = std::max(ra, rb);
    int outAxis = -1;
    int64_t groups = 0;
    for (const auto& [t, r, isA] : {std::tuple{a, ra, true}, std::tuple{b, rb, false}}) {
      const int axis = values_.at(t).axis;
      if (axis < 0) continue;
      if (groups != 0 && values_.at(t).groups != groups) return false;
      groups = values_.at(t).groups;
      int o = -1;
      if (axis < r - 2) {
        o = axis + outRank - r;
      } else if (isA && axis == r - 2) {
        o = outRank - 2;
      } else if (!isA && axis == (transB ? r - 2 : r - 1)) {
        o = outRank - 1;
      } else {
        return false;  // the reduction axis: left to a whole operand
      }
      if (outAxis >= 0 && o != outAxis) return false;
      outAxis = o;
    }
    if (outAxis < 0) return false;
    std::vector<Names> inputs;
    for (const auto& [t, r] : {std::pair{a, ra}, std::pair{b, rb}}) {
      const Value& v = values_.at(t);
      const int i = outAxis - (outRank - r);
      if (v.axis >= 0 || outAxis >= outRank - 2 || i < 0 || dims(t)[static_cast<std::size_t>(i)] == 1) {
        inputs.push_back(v.axis >= 0 ? v.names : whole(t));
        continue;
      }
      auto names = split(t, i, groups);
      if (!names) return false;
      inputs.push_back(*names);
    }
    emitWith(op, inputs);
    setOutputs(op, outAxis, groups);
    return true;
  }

  bool gemm(const ir::Op& op) {
    const std::string &a = in(op, "a"), &b = in(op, "b"), &c = in(op, "c");
    const Value &va = values_.at(a), &vb = values_.at(b), &vc = values_.at(c);
    if (!isConstant(b) || vb.axis >= 0 || op.boolean("trans_a")) return false;
    const bool transB = op.boolean("trans_b");
    const int columnAxis = transB ? 0 : 1, rowAxis = transB ? 1 : 0;
    const int64_t columns = dims(b)[static_cast<std::size_t>(columnAxis)];
    const ir::Dims& cd = dims(c);
    if (va.axis == 1) {
      auto w = split(b, rowAxis, va.groups);
      if (!w) return false;
      noteSplit(op, b, rowAxis, "row split");
      const Names src = va.names, bias = whole(c);
      // The bias is added once: by part 0; the other parts' beta is 0.
      emitPartialSum(op, [&](std::size_t p) {
        ir::Op copy = op;
        copy.inputs[0].name = src[p];
        copy.inputs[1].name = (*w)[p];
        copy.inputs[2].name = bias[p];
        if (p > 0) setParam(copy, "beta", 0.0);
        return copy;
      });
      return true;
    }
    if (va.axis == 0) {
      const int64_t groups = va.groups;
      Names bias = whole(c);
      if (cd.size() == 2 && cd[0] != 1) {
        auto rows = split(c, 0, groups);
        if (!rows) return false;
        bias = *rows;
      }
      emitWith(op, {va.names, vb.names, bias});
      setOutputs(op, 0, groups);
      return true;
    }
    if (!eligibleWeight(op, b, columns)) return false;
    const int64_t groups = fusedGroups(op.outputs[0].name, 1);
    auto w = split(b, columnAxis, groups);
    if (!w) return false;
    Names bias;
    if (vc.axis >= 0 && vc.axis == static_cast<int>(cd.size()) - 1 && vc.groups == groups) {
      bias = vc.names;
    } else if (!cd.empty() && cd.back() != 1) {
      auto columnsOfBias = split(c, static_cast<int>(cd.size()) - 1, groups);
      if (!columnsOfBias) return false;
      bias = *columnsOfBias;
    } else {
      bias = whole(c);
    }
    noteSplit(op, b, columnAxis, columnSplit(groups));
    emitWith(op, {va.names, *w, bias});
    setOutputs(op, 1, groups);
    return true;
  }

  // ---- convolutional networks ---------------------------------------------------------------
  // The op's inputs named per part in op.inputs order, from their arg names.
  static std::vector<Names> byArg(const ir::Op& op, const std::map<std::string, Names>& names) {
    std::vector<Names> inputs;
    for (const auto& t : op.inputs) inputs.push_back(names.at(t.argName));
    return inputs;
  }

  static bool sameShapeUnary(const std::string& type) {
    return type == "relu" || type == "lrelu" || type == "sigmoid" || type == "clip" || type == "unary" ||
           type == "cast";
  }

  // conv2d and N-d conv, channels on axis 1, with a constant weight [O, C/group, k...]. Input
  // whole: each part computes its share of the output channels (column split: weight and bias
  // split on axis 0), the result split on axis 1, where that split reaches a reader that takes it
  // as it is (splitSurvives; else the conv stays whole rather than have its result gathered).
  // Input split along its channels: each part convolves its input channels with its rows of the
  // weight (row split, weight axis 1) and the parts' partial results are summed; only part 0
  // adds the bias, the others a zero bias. Input split along the batch: each part its images,
  // the weight whole.
  bool conv(const ir::Op& op) {
    const std::string &src = in(op, "src"), &weight = in(op, "weight"), &bias = in(op, "bias");
    const Value& vs = values_.at(src);
    if (!isConstant(weight) || values_.at(weight).axis >= 0 || vs.groups > 1) return false;
    if (vs.axis == 0) {
      emitWith(op, byArg(op, {{"src", vs.names}, {"weight", whole(weight)}, {"bias", whole(bias)}}));
      setOutputs(op, 0);
      return true;
    }
    const int64_t group = op.integer("group");
    if (group > 1) return groupedConv(op, group);
    if (vs.axis == 1) {
      const ir::DType type = graph_.tensors.at(op.outputs[0].name).dtype;
      if (type != ir::DType::Float && type != ir::DType::Float16) return false;  // what all_reduce_sum adds
      auto w = split(weight, 1);
      if (!w) return false;
      noteSplit(op, weight, 1, "row split");
      const Names source = vs.names, fullBias = whole(bias);
      const std::string zero = fresh(bias + ".zero"), zeroOp = freshOp(op.name + ".zero_bias");
      emit([&](std::size_t) {
        return makeOp(
            zeroOp, "zeros", {}, {{"dst", zero}},
            {{"dtype", std::string(ir::dtypeName(graph_.tensors.at(bias).dtype))}, {"dims", doubles(dims(bias))}});
      });
      emitPartialSum(op, [&](std::size_t p) {
        ir::Op copy = op;
        for (auto& t : copy.inputs) {
          if (t.argName == "src") t.name = source[p];
          if (t.argName == "weight") t.name = (*w)[p];
          if (t.argName == "bias") t.name = p == 0 ? fullBias[p] : zero;
        }
        return copy;
      });
      return true;
    }
    if (vs.axis >= 0) return false;  // split along a spatial axis: the windows would cross parts
    if (!eligibleWeight(op, weight, dims(weight)[0]) || !channelsStaySplit(op)) return false;
    auto w = split(weight, 0);
    auto b = split(bias, 0);
    if (!w || !b) return false;
    noteSplit(op, weight, 0, "column split");
    emitWith(op, byArg(op, {{"src", vs.names}, {"weight", *w}, {"bias", *b}}));
    setOutputs(op, 1);
    return true;
  }

  // A grouped (depthwise) conv whose groups divide among the parts: part p's input channels are
  // exactly its groups' inputs, so each part convolves them with its groups' weight rows and
  // bias (axis 0), group / parts groups, the result split on axis 1 with no traffic. An input
  // split along its channels is used as it is; a whole one is sliced locally, but only where the
  // result's readers keep it split (else the cheap conv would cost an all_gather).
  bool groupedConv(const ir::Op& op, int64_t group) {
    const std::string &src = in(op, "src"), &weight = in(op, "weight"), &bias = in(op, "bias");
    const Value& vs = values_.at(src);
    if (group % static_cast<int64_t>(parts_) != 0 || (vs.axis >= 0 && vs.axis != 1)) return false;
    if (vs.axis < 0 && (!eligibleWeight(op, weight, dims(weight)[0]) || !channelsStaySplit(op))) return false;
    auto s = split(src, 1);
    auto w = split(weight, 0);
    auto b = split(bias, 0);
    if (!s || !w || !b) return false;
    const int64_t groups = group / static_cast<int64_t>(parts_);
    noteSplit(op, weight, 0, "group split (" + std::to_string(groups) + " of " + std::to_string(group) + " groups)");
    emitWith(op, byArg(op, {{"src", *s}, {"weight", *w}, {"bias", *b}}),
             [&](ir::Op& copy, std::size_t) { setParam(copy, "group", double(groups)); });
    setOutputs(op, 1);
    return true;
  }

  // Whether a conv of a whole input, split by output channels, would keep its result split up to
  // readers that take it so; if not, the report says why it stays whole.
  bool channelsStaySplit(const ir::Op& op) {
    if (splitSurvives(op.outputs[0].name, 1)) return true;
    const std::string& weight = in(op, "weight");
    result_.report.replicated.push_back(op.optype + " '" + op.name + "': weight '" + weight + "' " +
                                        formatDims(dims(weight)) +
                                        " stays whole: its output channels would have to be gathered for its readers");
    return false;
  }

  // Whether a channel-wise op (batchnorm, pools, pad, resize) computes its result slice by slice
  // from its src split along `axis`, the result split along the same axis: pools along the batch
  // or channels (their windows span the rest), pad and resizes along an axis they keep as it is.
  bool keepsSplit(const ir::Op& op, int axis) const {
    const std::string& type = op.optype;
    const ir::TensorArg* source = op.findInput("src");
    if (!source || axis < 0 || axis >= rank(source->name)) return false;
    const std::string& src = source->name;
    const auto a = static_cast<std::size_t>(axis);
    if (type == "batchnorm") return true;
    if (type == "maxpool2d" || type == "avgpool2d" || type == "pool" || type == "global_avgpool") return axis <= 1;
    if (type == "pad") {
      const auto pads = op.integers("pads");
      return pads.size() == 2 * dims(src).size() && pads[a] == 0 && pads[a + dims(src).size()] == 0;
    }
    if (type == "upsample") {
      const auto scales = op.numbers("scales");
      return a < scales.size() && scales[a] == 1.0;
    }
    if (type == "resize" || type == "interpolate") {
      const auto extents = op.integers("dims");
      if (a >= extents.size() || extents[a] != dims(src)[a]) return false;
      if (type == "resize") return true;
      const auto scales = op.numbers("scales");
      // tf_half_pixel_for_nn moves even an axis it keeps by half a cell (Resize.cpp).
      return a < scales.size() && scales[a] == 1.0 && op.string("coordinate_mode") != "tf_half_pixel_for_nn";
    }
    return false;
  }

  static bool channelWiseType(const std::string& type) {
    return type == "batchnorm" || type == "maxpool2d" || type == "avgpool2d" || type == "pool" ||
           type == "global_avgpool" || type == "pad" || type == "upsample" || type == "resize" || type == "interpolate";
  }

  // A channel-wise op over a split src keeps the split (keepsSplit); a batchnorm split along its
  // channels takes its parts of scale, offset, mean and var, and a resize its part of the dims.
  bool channelWise(const ir::Op& op) {
    const Value& v = values_.at(in(op, "src"));
    if (v.axis < 0 || !keepsSplit(op, v.axis)) return false;
    const auto a = static_cast<std::size_t>(v.axis);
    if (op.optype == "batchnorm" && v.axis == 1) {
      std::map<std::string, Names> names{{"src", v.names}};
      for (const char* arg : {"scale", "offset", "mean", "var"}) {
        auto parameter = split(in(op, arg), 0);
        if (!parameter) return false;
        names[arg] = *parameter;
      }
      emitWith(op, byArg(op, names));
      setOutputs(op, 1);
      return true;
    }
    if (op.optype == "resize" || op.optype == "interpolate") {
      auto extents = op.integers("dims");
      extents[a] /= static_cast<int64_t>(parts_);
      emitWith(op, {v.names}, [&](ir::Op& copy, std::size_t) {
        setParam(copy, "dims", std::vector<double>(extents.begin(), extents.end()));
      });
      setOutputs(op, v.axis);
      return true;
    }
    return same(op, v.axis);
  }

  // The axis of `to` along which a reshape of `from` split along `axis` stays split (each part's
  // slice one run, as reshape() keeps it), or -1.
  // Whether `t`, held split along `axis`, would stay split up to the ops that take such a split
  // as it is (a conv or a product over its input channels, which sums the parts' results), through
  // element-wise and channel-wise ops and transposes, without an all_gather on the way.
  bool splitSurvives(const std::string& t, int axis) {
    const auto key = std::make_pair(t, axis);
    if (auto it = survives_.find(key); it != survives_.end()) return it->second;
    bool kept = true;
    for (const auto& io : graph_.io) kept = kept && !(io.direction == ir::Direction::Out && io.tensor == t);
    auto it = readers_.find(t);
    if (it == readers_.end() || it->second.empty()) kept = false;
    for (std::size_t r = 0; kept && it != readers_.end() && r < it->second.size(); ++r)
      kept = readerKeeps(*it->second[r], t, axis);
    survives_[key] = kept;
    return kept;
  }

  bool readerKeeps(const ir::Op& reader, const std::string& t, int axis) {
    const std::string& type = reader.optype;
    if (reader.outputs.size() != 1) return false;
    const std::string& out = reader.outputs[0].name;
    if (type == "conv2d" || type == "conv") {
      if (in(reader, "src") != t || axis != 1 || !isConstant(in(reader, "weight"))) return false;
      const int64_t group = reader.integer("group");
      return group == 1 || (group % static_cast<int64_t>(parts_) == 0 && splitSurvives(out, 1));
    }
    if (type == "matmul") {
      const std::string& b = in(reader, "src2");
      return in(reader, "src1") == t && axis == rank(t) - 1 && isConstant(b) && rank(b) == 2;
    }
    if (type == "gemm")
      return in(reader, "a") == t && axis == 1 && !reader.boolean("trans_a") && isConstant(in(reader, "b"));
    if (sameShapeUnary(type)) return splitSurvives(out, axis);
    if (type == "elew" || type == "elew_bcast") return splitSurvives(out, axis + rank(out) - rank(t));
    if (type == "transpose") {
      const auto axes = reader.integers("axes");
      const auto to = std::find(axes.begin(), axes.end(), axis);
      return to != axes.end() && splitSurvives(out, static_cast<int>(to - axes.begin()));
    }
    if (type == "reshape" || type == "flatten") {
      // The look-ahead follows one run of channels only, not a split held in groups.
      const auto to = reshapedSplit(dims(t), axis, 1, dims(out));
      return to && to->second == 1 && splitSurvives(out, to->first);
    }
    if (type == "reduce") {
      const auto axes = reader.integers("axes");
      if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return false;
      const int removed = reader.boolean("keepdims")
                              ? 0
                              : static_cast<int>(
                                    std::count_if(axes.begin(), axes.end(), [&](int64_t x) { return x < axis; }));
      return splitSurvives(out, axis - removed);
    }
    if (channelWiseType(type)) return in(reader, "src") == t && keepsSplit(reader, axis) && splitSurvives(out, axis);
    return false;
  }

  // ---- the end of the walk ------------------------------------------------------------------
  // Each io output as the parts must hold it: whole, or a retained cache in its input's split.
  void finishOutputs() {
    std::vector<std::map<std::string, std::string>> renames(parts_);
    for (const auto& io : graph_.io) {
      if (io.direction != ir::Direction::Out) continue;
      const std::string& t = io.tensor;
      int target = -1;
      if (io.bufferName.size() > kRetainedStateSuffix.size() && io.bufferName.ends_with(kRetainedStateSuffix)) {
        const std::string input = io.bufferName.substr(0, io.bufferName.size() - kRetainedStateSuffix.size());
        for (const auto& other : graph_.io) {
          if (other.direction == ir::Direction::In && other.bufferName == input) target = initialAxis(other.tensor);
        }
      }
      const Value v = values_.at(t);
      if (v.axis == target) {
        if (target >= 0) splitIo_[io.bufferName] = target;
        continue;
      }
      Names names = whole(t);
      if (target >= 0) {
        names = sliceLocally(t, names, target);
        splitIo_[io.bufferName] = target;
      }
      const std::string inner = fresh(t + ".inner");
      for (std::size_t p = 0; p < parts_; ++p) {
        renames[p][t] = inner;
        renames[p][names[p]] = t;
      }
    }
    for (const auto& io : graph_.io) {
      if (io.direction == ir::Direction::In && initialAxis(io.tensor) >= 0)
        splitIo_[io.bufferName] = initialAxis(io.tensor);
    }
    for (std::size_t p = 0; p < parts_; ++p) {
      auto rename = [&](std::string& name) {
        if (auto it = renames[p].find(name); it != renames[p].end()) name = it->second;
      };
      for (auto& op : out_[p].ops) {
        for (auto& t : op.inputs) rename(t.name);
        for (auto& t : op.outputs) rename(t.name);
      }
      for (std::size_t i = 0; i < out_[p].io.size(); ++i) {
        auto& io = out_[p].io[i];
        auto it = splitIo_.find(io.bufferName);
        if (it == splitIo_.end()) continue;
        io.dims[static_cast<std::size_t>(it->second)] /= static_cast<int64_t>(parts_);
        for (auto& combination : out_[p].allowedShapes) {
          if (i < combination.size() && combination[i].size() > static_cast<std::size_t>(it->second))
            combination[i][static_cast<std::size_t>(it->second)] /= static_cast<int64_t>(parts_);
        }
      }
    }
  }

  int initialAxis(const std::string& tensor) const {
    auto it = initial_.find(tensor);
    return it == initial_.end() ? -1 : it->second;
  }

 public:
  void rememberInitial(const std::map<std::string, int>& retainedSplits) { initial_ = retainedSplits; }

 private:
  // An op none of whose results is read (and that is not an io output) goes, last to first.
  static void removeDeadOps(ir::Graph& g) {
    std::set<std::string> live;
    for (const auto& io : g.io) {
      if (io.direction == ir::Direction::Out) live.insert(io.tensor);
    }
    std::vector<ir::Op> kept;
    for (auto it = g.ops.rbegin(); it != g.ops.rend(); ++it) {
      bool needed = it->outputs.empty();
      for (const auto& t : it->outputs) needed = needed || live.count(t.name);
      if (!needed) continue;
      for (const auto& t : it->inputs) live.insert(t.name);
      kept.push_back(std::move(*it));
    }
    g.ops.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  }

  void renumberCollectives() {
    std::map<int64_t, int> ids;
    for (const auto& op : out_[0].ops) {
      if (op.optype == "all_reduce_sum" || op.optype == "all_gather") {
        ids.emplace(op.integer("collective"), static_cast<int>(ids.size()));
      }
    }
    for (auto& g : out_) {
      for (auto& op : g.ops) {
        if (op.optype == "all_reduce_sum" || op.optype == "all_gather")
          setParam(op, "collective", double(ids.at(op.integer("collective"))));
      }
    }
  }

  void report() {
    SliceReport& r = result_.report;
    for (std::size_t p = 0; p < parts_; ++p) {
      uint64_t bytes = 0;
      for (const auto& op : result_.parts[p].ops) {
        if (op.optype != "create" || !op.boolean("from_file")) continue;
        const std::string& name = op.outputs[0].name;
        if (const ir::WeightTensor* w = result_.findWeight(p, name, weights_)) {
          bytes += w->data.size();
        } else {
          const auto& info = result_.parts[p].tensors.at(name);
          bytes += static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
        }
      }
      r.weightBytes.push_back(bytes);
    }
    for (const auto& op : result_.parts[0].ops) {
      if (op.optype != "all_reduce_sum" && op.optype != "all_gather") continue;
      const auto& info = result_.parts[0].tensors.at(op.outputs[0].name);
      CollectiveTraffic c;
      c.collective = static_cast<int>(op.integer("collective"));
      c.optype = op.optype;
      c.op = op.name;
      c.tensor = collectiveTensors_.count(op.name) ? collectiveTensors_.at(op.name) : op.outputs[0].name;
      c.bytes = static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
      if (op.optype == "all_gather") {
        r.replicated.push_back("'" + c.tensor + "' is made whole (all_gather " + std::to_string(c.collective) +
                               ") for the replicated ops that read it");
      }
      r.collectives.push_back(std::move(c));
    }
    for (const auto& [buffer, axis] : splitIo_) {
      r.split.push_back("retained buffer '" + buffer + "': each part keeps its slice along axis " +
                        std::to_string(axis));
    }
  }

  const ir::Graph& graph_;
  const std::size_t parts_;
  const WeightLookup& weights_;
  const SliceOptions& options_;
  std::map<std::string, const ir::Op*> producers_;
  std::map<std::string, std::vector<const ir::Op*>> readers_;
  std::set<std::string> tensorNames_, opNames_;
  std::map<std::string, Value> values_;
  std::map<std::tuple<std::string, int, int64_t>, Names> splits_;
  std::map<std::pair<std::string, int>, Names> rebased_;  // index tuples less each part's first head
  std::map<std::pair<std::string, int>, bool> survives_;  // splitSurvives' answers
  std::map<std::string, std::string> collectiveTensors_;  // collective op -> the tensor it serves
  std::map<std::string, int> wishes_, initial_, splitIo_;
  std::vector<ir::Graph> out_;
  int nextCollective_ = 0;
  std::shared_ptr<WeightSlices> slices_;
  SlicedNetwork result_;
};

}  // namespace

uint64_t SliceReport::collectiveBytes() const {
  uint64_t total = 0;
  for (const auto& c : collectives) total += c.bytes;
  return total;
}

std::string SliceReport::text() const {
  std::ostringstream s;
  for (const auto& line : split) s << "split: " << line << "\n";
  for (const auto& line : replicated) s << "replicated: " << line << "\n";
  for (std::size_t p = 0; p < weightBytes.size(); ++p) s << "part " << p << ": " << weightBytes[p] << " weight bytes\n";
  for (const auto& c : collectives) {
    s << "collective " << c.collective << ": " << c.optype << " '" << c.op << "' of '" << c.tensor << "', " << c.bytes
      << " bytes per inference\n";
  }
  s << "collectives: " << collectiveBytes() << " bytes per inference\n";
  return s.str();
}

const ir::WeightTensor* SlicedNetwork::findWeight(std::size_t part, std::string_view name,
                                                  const WeightLookup& unsplit) const {
  if (part < weights.size()) {
    for (const auto& w : weights[part]) {
      if (w.name == name) return &w;
    }
  }
  return unsplit ? unsplit(name) : nullptr;
}

PeerTraffic peerTraffic(const ir::Graph& part, std::size_t partIndex, std::size_t parts) {
  PeerTraffic traffic;
  if (parts < 2) return traffic;
  auto bytesOf = [&part](const std::string& tensor, uint64_t& elements) {
    const ir::TensorInfo& info = part.tensors.at(tensor);
    elements = static_cast<uint64_t>(ir::elementCount(info.dims));
    return elements * ir::dtypeSize(info.dtype);
  };
  for (const ir::Op& op : part.ops) {
    uint64_t moved = 0, elements = 0;
    const ir::Param* wire = op.findParam("wire");
    if (wire && op.string("wire") == "mxint8") {
      // Every part's encoded contribution to every other part (ops/Collective.cpp).
      bytesOf(op.inputs[0].name, elements);
      moved = (parts - 1) * kernels::mx::mxint8EncodedBytes(elements);
    } else if (op.optype == "all_reduce_sum") {
      const uint64_t total = bytesOf(op.outputs[0].name, elements);
      const uint64_t elementBytes = elements == 0 ? 0 : total / elements;
      // The chunk PeerRendezvous gives this part: elements [E*p/N, E*(p+1)/N).
      const uint64_t own = (elements * (partIndex + 1) / parts - elements * partIndex / parts) * elementBytes;
      moved = (parts - 1) * own + (total - own);
    } else if (op.optype == "all_gather") {
      moved = (parts - 1) * bytesOf(op.inputs[0].name, elements);
    }
    traffic.sent += moved;
    traffic.received += moved;
  }
  return traffic;
}

std::span<const std::byte> WeightSlices::slice(const ir::WeightTensor& weight, std::size_t axis, std::size_t part,
                                               std::size_t parts, std::size_t groups) {
  const std::size_t element = ir::dtypeSize(weight.dtype);
  const auto outer = static_cast<std::size_t>(product(weight.dims, 0, axis));
  const auto extent = static_cast<std::size_t>(weight.dims[axis]);
  const std::size_t inner = static_cast<std::size_t>(product(weight.dims, axis + 1, weight.dims.size())) * element;
  const std::size_t group = extent / groups, share = group / parts;
  if (outer == 1 && groups == 1) return weight.data.subspan(part * share * inner, share * inner);
  const Key key{weight.name, weight.dtype, weight.dims, axis, part, parts, groups};
  auto [it, inserted] = copies_.try_emplace(key);
  if (!inserted) return it->second;
  std::vector<std::byte>& out = it->second;
  out.resize(outer * groups * share * inner);
  std::byte* to = out.data();
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t g = 0; g < groups; ++g, to += share * inner)
      std::memcpy(to, weight.data.data() + (o * extent + g * group + part * share) * inner, share * inner);
  }
  copiedBytes_ += out.size();
  return out;
}

SlicedNetwork sliceTensors(const ir::Graph& graph, std::size_t parts, const WeightLookup& weights,
                           const SliceOptions& options, std::shared_ptr<WeightSlices> slices) {
  if (parts == 0) throw std::invalid_argument("tensor slicing: parts must be at least 1");
  if (!slices) slices = std::make_shared<WeightSlices>();
  ir::Graph inferred = graph;
  ir::inferShapes(inferred);
  // First walk: which retained caches the network writes by heads. Second: with them split.
  Slicer probe(inferred, parts, weights, options, {}, slices);
  probe.run();
  const std::map<std::string, int> retainedSplits = probe.wishes();
  Slicer slicer(inferred, parts, weights, options, retainedSplits, slices);
  slicer.rememberInitial(retainedSplits);
  return slicer.run();
}

}  // namespace qaic::compiler::partition
