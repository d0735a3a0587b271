// SPDX-License-Identifier: Apache-2.0
// pipeline-stages: with a partition config of several partitions (-mdp-pipeline-stages=N, or a
// loaded config of one device per partition), after cast-placement every specialization's graph
// is cut into consecutive stages (partition/Pipelining.hpp): the stages the partitions' node
// lists name, else N ranges balanced by weight bytes, chosen on the default specialization's
// graph and applied to every specialization by op name. The config then holds each stage's
// node list (what -mdp-dump-partition-config writes). A retained-state pair stays on the stage
// that reads and updates it (its io goes to that stage's part only). Part 0 (the last stage)
// replaces the compilation's graphs, the other stages go to a compilation each, shaped by the
// part shape passes, as tensor-slicing's parts are.
#include <map>
#include <set>

#include "CompileError.hpp"
#include "partition/Pipelining.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

// The main variant's assignment, carried to another specialization's graph by op name.
partition::StageAssignment byName(const ir::Graph& main, const partition::StageAssignment& stages,
                                  const ir::Graph& other, const std::string& model, std::size_t variant) {
  std::map<std::string, int> stageOf;
  for (std::size_t i = 0; i < main.ops.size(); ++i) stageOf[main.ops[i].name] = stages[i];
  partition::StageAssignment result;
  for (const ir::Op& op : other.ops) {
    const auto it = stageOf.find(op.name);
    if (it == stageOf.end())
      throw CompileError(model + ": pipeline stages: specialization " + std::to_string(variant) + " has op '" +
                         op.name + "', which the default specialization's graph has not; every specialization " +
                         "must have the same ops to be cut alike");
    result.push_back(it->second);
  }
  return result;
}

}  // namespace

void pipelineStagesPass(Compilation& compilation) {
  PartitionConfig& config = compilation.partitionConfig;
  if (!config.pipelined()) return;
  const std::size_t stages = config.partitions.size();
  const std::string& model = compilation.options.model;
  const ir::Graph& main = compilation.variants[compilation.mainVariant].graph;
  std::set<std::string> retained;  // each pair stays on the stage that reads and updates it
  for (std::size_t k = 0; k < compilation.retained.size() && k < main.io.size(); ++k)
    if (compilation.retained[k]) retained.insert(main.io[k].bufferName);
  std::set<std::string> selecting;  // inputs whose dims differ between specializations
  for (const LoadedModel& variant : compilation.variants) {
    for (const ir::IoBuffer& io : variant.graph.io) {
      if (io.direction != ir::Direction::In) continue;
      for (const ir::IoBuffer& mainIo : main.io)
        if (mainIo.bufferName == io.bufferName && mainIo.dims != io.dims) selecting.insert(io.bufferName);
    }
  }
  partition::StageAssignment assignment;
  if (config.partitions.front().nodeList.empty()) {
    assignment = partition::balanceStages(main, stages, retained);
  } else {
    std::vector<std::vector<std::string>> lists;
    for (const Partition& p : config.partitions) lists.push_back(p.nodeList);
    assignment = partition::stagesFromNodeLists(main, lists, compilation.options.partitionConfig);
  }
  const auto nodeLists = partition::stageNodeLists(main, assignment, stages);
  for (std::size_t s = 0; s < stages; ++s) config.partitions[s].nodeList = nodeLists[s];

  std::vector<std::vector<LoadedModel>> byPart(stages);
  for (std::size_t v = 0; v < compilation.variants.size(); ++v) {
    const LoadedModel& whole = compilation.variants[v];
    const partition::StageAssignment own = v == compilation.mainVariant
                                               ? assignment
                                               : byName(main, assignment, whole.graph, model, v);
    partition::StagedNetwork net;
    try {
      net = partition::splitStages(whole.graph, own, stages, retained, selecting);
    } catch (const CompileError& e) {
      throw CompileError(model + ": " + e.what());
    }
    if (v == compilation.mainVariant) {
      compilation.summary.pipelineStages = stages;
      compilation.summary.pipelineReport = net.report();
      compilation.partTraffic = net.traffic;
    }
    for (std::size_t p = 0; p < stages; ++p) {
      LoadedModel part;
      part.graph = std::move(net.parts[p]);
      part.weights = whole.weights;  // each stage's create ops find theirs among the network's
      part.owner = whole.owner;
      byPart[p].push_back(std::move(part));
    }
  }

  shapeParts(compilation, std::move(byPart));
}

}  // namespace qaic::compiler
