// SPDX-License-Identifier: Apache-2.0
// Pipeline stages: one network split into N consecutive ranges of its ops, stage s on the
// s-th device. Every op but a constant's (`create`, `zeros`, `arange`: no tensor inputs) runs
// in one stage; a constant goes into every stage that reads it, so weights never move. A tensor
// computed in stage r and read in a later stage s moves card to card: stage r sends it
// (peer_send, right after the op that computes it) and stage s receives it (peer_receive, right
// before the first op that reads it), both under one `channel` id, numbered 0, 1, ... in the
// network's order. A network output computed before the last stage is sent to the last stage.
//
// The parts are in the container's order (PartitionConfig.hpp's partOfStage): part 0 is the
// last stage, and its io is the network's own (every input, used or not, and every output), as
// the outer container's must be; part p >= 1 is stage p - 1, with only the inputs it reads (and,
// in a specialized program, those whose dims select the specialization) and no outputs.
//
// A retained-state pair (-retained-state: input X, output X_RetainedState, a KV cache) stays on
// the stage whose ops read X and compute X_RetainedState: both are in that stage's io only, and
// the cache never moves. Balanced stages never cut between a cache's read, its write and the
// reads of what was written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/Graph.hpp"
#include "partition/TensorSlicing.hpp"

namespace qaic::compiler::partition {

// Each op's stage (by op index; -1 for a constant, which goes wherever it is read).
using StageAssignment = std::vector<int>;

// N stages over the ops in graph order, each a consecutive range holding about 1/N of the
// weight bytes (the bytes of the constants an op reads first, plus one per op, so ops without
// weights count too), none empty. Throws CompileError when the network has fewer ops than N.
// The retained buffers' names (both of each pair) are kept whole in one stage.
StageAssignment balanceStages(const ir::Graph& graph, std::size_t stages, const std::set<std::string>& retained = {});

// The stages the config's node lists give (nodeLists[s]: the op names of stage s). An op no list
// names joins the latest stage among the ops whose results it reads (stage 0 without any).
// Throws CompileError naming `configName` and the field: a node the graph does not have, a
// stage that reads a tensor a later stage computes, a stage left without an op.
StageAssignment stagesFromNodeLists(const ir::Graph& graph, const std::vector<std::vector<std::string>>& nodeLists,
                                    const std::string& configName);

// The op names of each stage (constants left out): what -mdp-dump-partition-config writes.
std::vector<std::vector<std::string>> stageNodeLists(const ir::Graph& graph, const StageAssignment& stages,
                                                     std::size_t stageCount);

struct StageTransfer {
  int channel = 0;
  std::string tensor;
  std::size_t fromStage = 0, toStage = 0;
  uint64_t bytes = 0;  // per inference
};

struct StagedNetwork {
  std::vector<ir::Graph> parts;  // by part (part 0 the last stage), shapes inferred
  std::vector<StageTransfer> transfers;
  std::vector<PeerTraffic> traffic;  // by part: bytes sent and received per inference
  std::string report() const;        // one line per transfer
};

// Splits `graph` (shapes inferred or not) into the stages `stages` assigns (stageCount >= 2);
// `retained` names the retained-state buffers (both of each pair), `selecting` the inputs whose
// dims differ between the program's specializations, which every stage maps (a card picks the
// specialization by them). Throws CompileError for an assignment that sends data backwards, or
// that reads a retained input in another stage than the one computing its X_RetainedState.
StagedNetwork splitStages(const ir::Graph& graph, const StageAssignment& stages, std::size_t stageCount,
                          const std::set<std::string>& retained = {}, const std::set<std::string>& selecting = {});

}  // namespace qaic::compiler::partition
