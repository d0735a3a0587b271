// SPDX-License-Identifier: Apache-2.0
#include "partition/Pipelining.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "CompileError.hpp"
#include "PartitionConfig.hpp"
#include "RetainedState.hpp"

namespace qaic::compiler::partition {
namespace {

bool isConstant(const ir::Op& op) { return op.inputs.empty(); }

uint64_t tensorBytes(const ir::Graph& inferred, const std::string& tensor) {
  const ir::TensorInfo& info = inferred.tensors.at(tensor);
  return static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
}

ir::Graph inferredCopy(const ir::Graph& graph) {
  ir::Graph inferred = graph;
  ir::inferShapes(inferred);
  return inferred;
}

// The op computing each tensor.
std::map<std::string, std::size_t> producers(const ir::Graph& graph) {
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < graph.ops.size(); ++i)
    for (const ir::TensorArg& out : graph.ops[i].outputs) producer[out.name] = i;
  return producer;
}

std::vector<double> asNumbers(const ir::Dims& dims) { return {dims.begin(), dims.end()}; }

// The -retained-state pairs (RetainedState.hpp) whose buffers `retained` names.
std::vector<RetainedPair> retainedPairs(const ir::Graph& graph, const std::set<std::string>& retained) {
  if (retained.empty()) return {};
  std::vector<RetainedPair> pairs;
  for (const RetainedPair& pair : findRetainedPairs(graph))
    if (retained.count(graph.io[pair.input].bufferName)) pairs.push_back(pair);
  return pairs;
}

// The ops (by index) that must share a pair's card: those reading its input, the one computing
// its output and those reading that (a cache's write and the reads of what was written).
std::vector<std::size_t> opsOfPair(const ir::Graph& graph, const RetainedPair& pair) {
  const std::string& state = graph.io[pair.input].tensor;
  const std::string& updated = graph.io[pair.output].tensor;
  std::vector<std::size_t> ops;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    bool touches = false;
    for (const ir::TensorArg& in : op.inputs) touches = touches || in.name == state || in.name == updated;
    for (const ir::TensorArg& out : op.outputs) touches = touches || out.name == updated;
    if (touches) ops.push_back(i);
  }
  return ops;
}

}  // namespace

StageAssignment balanceStages(const ir::Graph& graph, std::size_t stages, const std::set<std::string>& retained) {
  const ir::Graph inferred = inferredCopy(graph);
  const auto producer = producers(inferred);
  std::vector<std::size_t> compute;  // indices of the non-constant ops
  std::vector<double> cost;
  std::set<std::string> counted;
  for (std::size_t i = 0; i < inferred.ops.size(); ++i) {
    const ir::Op& op = inferred.ops[i];
    if (isConstant(op)) continue;
    double bytes = 1;
    for (const ir::TensorArg& in : op.inputs) {
      const auto it = producer.find(in.name);
      if (it != producer.end() && isConstant(inferred.ops[it->second]) && counted.insert(in.name).second)
        bytes += static_cast<double>(tensorBytes(inferred, in.name));
    }
    compute.push_back(i);
    cost.push_back(bytes);
  }
  const std::size_t count = compute.size();
  if (count < stages)
    throw CompileError("a pipeline of " + std::to_string(stages) + " stages: the network has " + std::to_string(count) +
                       " ops (constants aside), fewer than its stages");
  double total = 0;
  for (double c : cost) total += c;
  // boundary[s]: the first compute op of stage s, from the midpoint of each op's cost.
  std::vector<std::size_t> boundary(stages + 1, count);
  boundary[0] = 0;
  double before = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const auto stage = std::min(stages - 1,
                                static_cast<std::size_t>(static_cast<double>(stages) * (before + cost[k] / 2) / total));
    for (std::size_t s = 1; s <= stage; ++s) boundary[s] = std::min(boundary[s], k);
    before += cost[k];
  }
  // A cut inside a retained pair's ops (as compute positions, overlapping ones merged) moves to
  // the nearer end: the cache stays on one card.
  std::map<std::size_t, std::size_t> position;
  for (std::size_t k = 0; k < count; ++k) position[compute[k]] = k;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const RetainedPair& pair : retainedPairs(inferred, retained)) {
    std::size_t lo = count, hi = 0;
    for (std::size_t op : opsOfPair(inferred, pair)) {
      if (!position.count(op)) continue;
      lo = std::min(lo, position[op]);
      hi = std::max(hi, position[op]);
    }
    if (lo < count) spans.emplace_back(lo, hi);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::size_t, std::size_t>> merged;
  for (const auto& span : spans) {
    if (!merged.empty() && span.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, span.second);
    } else {
      merged.push_back(span);
    }
  }
  for (std::size_t s = 1; s < stages; ++s) {
    for (const auto& [lo, hi] : merged) {
      if (boundary[s] <= lo || boundary[s] > hi) continue;
      boundary[s] = boundary[s] - lo <= hi + 1 - boundary[s] ? lo : hi + 1;
    }
  }
  // No stage empty: each boundary after the previous one and leaving an op for every later stage.
  for (std::size_t s = 1; s < stages; ++s) boundary[s] = std::max(boundary[s], boundary[s - 1] + 1);
  for (std::size_t s = stages - 1; s >= 1; --s) boundary[s] = std::min(boundary[s], boundary[s + 1] - 1);
  StageAssignment assignment(inferred.ops.size(), -1);
  std::size_t stage = 0;
  for (std::size_t k = 0; k < count; ++k) {
    while (stage + 1 < stages && k >= boundary[stage + 1]) ++stage;
    assignment[compute[k]] = static_cast<int>(stage);
  }
  return assignment;
}

StageAssignment stagesFromNodeLists(const ir::Graph& graph, const std::vector<std::vector<std::string>>& nodeLists,
                                    const std::string& configName) {
  std::map<std::string, std::size_t> opIndex;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) opIndex[graph.ops[i].name] = i;
  StageAssignment assignment(graph.ops.size(), -2);  // -2: not listed
  auto field = [&](std::size_t s) { return configName + ": partitions[" + std::to_string(s) + "].nodeList"; };
  for (std::size_t s = 0; s < nodeLists.size(); ++s) {
    for (std::size_t n = 0; n < nodeLists[s].size(); ++n) {
      const auto it = opIndex.find(nodeLists[s][n]);
      if (it == opIndex.end())
        throw CompileError(field(s) + "[" + std::to_string(n) + "]: the network has no node '" + nodeLists[s][n] + "'");
      assignment[it->second] = static_cast<int>(s);
    }
  }
  const auto producer = producers(graph);
  std::vector<bool> populated(nodeLists.size(), false);
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (isConstant(op)) {
      assignment[i] = -1;
      continue;
    }
    int latest = 0;
    for (const ir::TensorArg& in : op.inputs) {
      const auto it = producer.find(in.name);
      if (it != producer.end() && assignment[it->second] >= 0) latest = std::max(latest, assignment[it->second]);
    }
    if (assignment[i] == -2) assignment[i] = latest;
    if (assignment[i] < latest) {
      const ir::Op* from = nullptr;
      for (const ir::TensorArg& in : op.inputs) {
        const auto it = producer.find(in.name);
        if (it != producer.end() && assignment[it->second] == latest) from = &graph.ops[it->second];
      }
      throw CompileError(field(static_cast<std::size_t>(assignment[i])) + ": node '" + op.name + "' reads what node '" +
                         (from ? from->name : "?") + "' of the later partitions[" + std::to_string(latest) +
                         "] computes; a pipeline's data flows from each partition to later ones only");
    }
    populated[static_cast<std::size_t>(assignment[i])] = true;
  }
  for (std::size_t s = 0; s < nodeLists.size(); ++s)
    if (!populated[s])
      throw CompileError(field(s) + ": no op of the network runs in this stage (constants go where they are read)");
  return assignment;
}

std::vector<std::vector<std::string>> stageNodeLists(const ir::Graph& graph, const StageAssignment& stages,
                                                     std::size_t stageCount) {
  std::vector<std::vector<std::string>> lists(stageCount);
  for (std::size_t i = 0; i < graph.ops.size(); ++i)
    if (stages[i] >= 0) lists[static_cast<std::size_t>(stages[i])].push_back(graph.ops[i].name);
  return lists;
}

std::string StagedNetwork::report() const {
  std::string text;
  for (const StageTransfer& t : transfers)
    text += "  channel " + std::to_string(t.channel) + ": '" + t.tensor + "' (" + std::to_string(t.bytes) +
            " bytes) from stage " + std::to_string(t.fromStage) + " to stage " + std::to_string(t.toStage) + "\n";
  return text;
}

StagedNetwork splitStages(const ir::Graph& graph, const StageAssignment& stages, std::size_t stageCount,
                          const std::set<std::string>& retained, const std::set<std::string>& selecting) {
  const ir::Graph inferred = inferredCopy(graph);
  const auto producer = producers(inferred);
  const int last = static_cast<int>(stageCount) - 1;
  auto stageOf = [&](const std::string& tensor) -> int {  // -1: a constant; -2: a graph input
    const auto it = producer.find(tensor);
    return it == producer.end() ? -2 : stages[it->second];
  };

  // Each retained io buffer's stage: the one computing the pair's output, where every read of
  // its input must be too.
  std::map<std::size_t, int> retainedStage;  // by io index, both buffers of each pair
  for (const RetainedPair& pair : retainedPairs(inferred, retained)) {
    const std::string& input = inferred.io[pair.input].bufferName;
    const std::string& output = inferred.io[pair.output].bufferName;
    const int stage = stageOf(inferred.io[pair.output].tensor);
    if (stage < 0)
      throw CompileError("pipeline stages: retained output '" + output + "' is not computed by a node of any stage");
    for (std::size_t op : opsOfPair(inferred, pair)) {
      const ir::Op& reader = inferred.ops[op];
      bool readsState = false;
      for (const ir::TensorArg& in : reader.inputs)
        readsState = readsState || in.name == inferred.io[pair.input].tensor;
      if (readsState && stages[op] >= 0 && stages[op] != stage)
        throw CompileError("pipeline stages: node '" + reader.name + "' in stage " + std::to_string(stages[op]) +
                           " reads retained state '" + input + "', whose '" + output + "' stage " +
                           std::to_string(stage) +
                           " computes; a retained pair stays on one card, so its reads and "
                           "its update must be in one stage");
    }
    retainedStage[pair.input] = stage;
    retainedStage[pair.output] = stage;
  }

  // The channels, in the network's order: each (tensor, later stage reading it) gets one.
  std::map<std::pair<std::string, int>, int> channelOf;
  StagedNetwork result;
  auto need = [&](const std::string& tensor, int reader, const std::string& readerName) {
    const int from = stageOf(tensor);
    if (from < 0 || from == reader) return;
    if (from > reader)
      throw CompileError("pipeline stages: " + readerName + " in stage " + std::to_string(reader) + " reads '" +
                         tensor + "', which stage " + std::to_string(from) + " computes");
    if (channelOf.emplace(std::pair{tensor, reader}, static_cast<int>(channelOf.size())).second) {
      result.transfers.push_back({static_cast<int>(channelOf.size()) - 1, tensor, static_cast<std::size_t>(from),
                                  static_cast<std::size_t>(reader), tensorBytes(inferred, tensor)});
    }
  };
  for (const ir::Op& op : inferred.ops) {
    const int stage = stages[&op - inferred.ops.data()];
    if (stage < 0) continue;
    for (const ir::TensorArg& in : op.inputs) need(in.name, stage, "node '" + op.name + "'");
  }
  for (std::size_t k = 0; k < inferred.io.size(); ++k) {
    const ir::IoBuffer& io = inferred.io[k];
    if (io.direction == ir::Direction::Out && !retainedStage.count(k))
      need(io.tensor, last, "output '" + io.bufferName + "'");
  }

  // A card picks a specialization's program by its input dims: a stage that reads none of the
  // inputs whose dims differ between specializations (one fed only by the previous stage) still
  // maps them, so every card runs the same specialization's stage.
  std::set<std::size_t> selectors;
  for (std::size_t k = 0; k < inferred.io.size(); ++k)
    if (inferred.io[k].direction == ir::Direction::In && selecting.count(inferred.io[k].bufferName))
      selectors.insert(k);

  result.parts.resize(stageCount);
  result.traffic.resize(stageCount);
  const auto parts = static_cast<double>(stageCount);
  for (int s = 0; s <= last; ++s) {
    const std::size_t part = partOfStage(static_cast<std::size_t>(s), stageCount);
    ir::Graph& g = result.parts[part];
    g.weightsFile = inferred.weightsFile;
    g.sourceName = inferred.sourceName;
    std::set<std::string> present;
    std::set<std::string> inputsRead;
    auto ensure = [&](const std::string& tensor) {
      if (present.count(tensor)) return;
      const auto it = producer.find(tensor);
      if (it == producer.end()) {
        inputsRead.insert(tensor);
      } else if (isConstant(inferred.ops[it->second])) {
        g.ops.push_back(inferred.ops[it->second]);
      } else if (const int from = stages[it->second]; from != s) {
        const int channel = channelOf.at({tensor, s});
        const ir::TensorInfo& info = inferred.tensors.at(tensor);
        ir::Op receive;
        receive.name = "stage_transfer" + std::to_string(channel) + ".receive";
        receive.optype = "peer_receive";
        receive.outputs.push_back({"dst", tensor});
        receive.params = {{"channel", static_cast<double>(channel)},
                          {"peer", static_cast<double>(partOfStage(static_cast<std::size_t>(from), stageCount))},
                          {"parts", parts},
                          {"dtype", std::string(ir::dtypeName(info.dtype))},
                          {"dims", asNumbers(info.dims)}};
        g.ops.push_back(std::move(receive));
        result.traffic[part].received += tensorBytes(inferred, tensor);
      }
      present.insert(tensor);
    };
    for (std::size_t i = 0; i < inferred.ops.size(); ++i) {
      const ir::Op& op = inferred.ops[i];
      if (stages[i] != s) continue;
      for (const ir::TensorArg& in : op.inputs) ensure(in.name);
      g.ops.push_back(op);
      for (const ir::TensorArg& out : op.outputs) {
        present.insert(out.name);
        for (int reader = s + 1; reader <= last; ++reader) {
          const auto it = channelOf.find({out.name, reader});
          if (it == channelOf.end()) continue;
          ir::Op send;
          send.name = "stage_transfer" + std::to_string(it->second) + ".send";
          send.optype = "peer_send";
          send.inputs.push_back({"src", out.name});
          send.params = {{"channel", static_cast<double>(it->second)},
                         {"peer", static_cast<double>(partOfStage(static_cast<std::size_t>(reader), stageCount))},
                         {"parts", parts}};
          g.ops.push_back(std::move(send));
          result.traffic[part].sent += tensorBytes(inferred, out.name);
        }
      }
    }
    // The last stage keeps the network's io but other stages' retained pairs; another stage the
    // inputs it reads, the inputs whose dims tell the specializations apart, and its retained
    // pairs.
    std::vector<std::size_t> kept;
    for (std::size_t k = 0; k < inferred.io.size(); ++k) {
      const ir::IoBuffer& io = inferred.io[k];
      const auto pair = retainedStage.find(k);
      if (pair != retainedStage.end()) {
        if (pair->second != s) continue;
        if (io.direction == ir::Direction::Out) ensure(io.tensor);
        kept.push_back(k);
      } else if (s == last) {
        if (io.direction == ir::Direction::Out) ensure(io.tensor);
        kept.push_back(k);
      } else if (io.direction == ir::Direction::In && (inputsRead.count(io.tensor) || selectors.count(k))) {
        kept.push_back(k);
      }
    }
    for (std::size_t k : kept) g.io.push_back(inferred.io[k]);
    for (const ir::ShapeCombination& combination : inferred.allowedShapes) {
      ir::ShapeCombination projected;
      for (std::size_t k : kept) projected.push_back(k < combination.size() ? combination[k] : ir::Dims{});
      g.allowedShapes.push_back(std::move(projected));
    }
    ir::inferShapes(g);
  }
  return result;
}

}  // namespace qaic::compiler::partition
