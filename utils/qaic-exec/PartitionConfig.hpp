// SPDX-License-Identifier: Apache-2.0
// -mdp-load-partition-config / -mdp-dump-partition-config: the vendor's multi-device partition
// config (docs/formats/partition-config.md), as efficient-transformers writes it:
//   {"connections": [{"devices": [0, 1], "type": "p2p"}],
//    "partitions": [{"name": "Partition0",
//                    "devices": [{"deviceId": 0, "numCores": 16},
//                                {"deviceId": 1, "numCores": 16}]}]}
// One partition of several devices is tensor slicing; several partitions of one device each,
// each naming its graph nodes in "nodeList" (or none naming any), are pipeline stages.
// qaic-exec reads, checks and writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qaic::compiler {

// The NSPs of one card: the most numCores a device of a partition can ask for.
inline constexpr uint32_t kNspsPerCard = 16;
// Device IDs are QIDs; the emulator has at most 64 cards, a host rarely more than a few dozen.
inline constexpr uint32_t kMaxPartitionDeviceId = 1023;
// The most parts a container holds (docs/formats/qpc.md 11c), so the most pipeline stages.
inline constexpr std::size_t kMaxPipelineStages = 16;

struct PartitionDevice {
  uint32_t deviceId = 0;
  uint32_t numCores = 0;
  bool operator==(const PartitionDevice&) const = default;
};

struct Partition {
  std::string name;
  std::vector<PartitionDevice> devices;
  // The graph nodes (IR op names) of this partition: a pipeline stage's range of the graph.
  // Empty: not given (a pipeline whose stages qaic-exec balances; the whole graph for one).
  std::vector<std::string> nodeList;
  bool operator==(const Partition&) const = default;
};

// Devices linked to each other; "p2p" (peer-to-peer over PCIe) is the only type.
struct PartitionConnection {
  std::vector<uint32_t> devices;
  std::string type = "p2p";
  bool operator==(const PartitionConnection&) const = default;
};

struct PartitionConfig {
  std::vector<PartitionConnection> connections;
  // Once checked: one partition (one device, or tensor slicing over several), or pipeline
  // stages (two or more partitions of one device each, stage s the s-th partition).
  std::vector<Partition> partitions;
  bool operator==(const PartitionConfig&) const = default;

  bool pipelined() const { return partitions.size() > 1; }
  // Every device of every partition.
  std::size_t deviceCount() const;
  // The devices in the order of the program's parts: a pipeline's part 0 (the outer container,
  // whose IO is the network's) is its last stage, parts 1..N-1 stages 0..N-2; otherwise the
  // partition's devices in order.
  std::vector<PartitionDevice> partDevices() const;
};

// A pipeline's stage `stage` of `stages` is part partOfStage(stage, stages): the last stage is
// part 0, since the network's outputs come from it; the others follow in order.
inline std::size_t partOfStage(std::size_t stage, std::size_t stages) { return stage + 1 == stages ? 0 : stage + 1; }

// Checks everything qaic-exec relies on; throws CompileError naming the file and the JSON path
// of the field ("cfg.json: partitions[0].devices[1].numCores: 17 is more than a card's 16 NSPs").
PartitionConfig parsePartitionConfig(std::string_view jsonText, const std::string& fileName);
PartitionConfig readPartitionConfig(const std::string& path);

// The JSON text writePartitionConfig writes (keys sorted, as efficient-transformers writes them).
std::string partitionConfigJson(const PartitionConfig& config);
// Writes the file atomically; throws CompileError naming it.
void writePartitionConfig(const std::string& path, const PartitionConfig& config);

// `devices` devices 0..devices-1, each with `numCores` NSPs, all in one p2p connection, one
// partition "Partition0": what a single-device compile uses.
PartitionConfig uniformPartitionConfig(uint32_t devices, uint32_t numCores);
// -mdp-pipeline-stages=N: devices 0..N-1 of `numCores` NSPs in one p2p connection, partition
// "Partition<s>" holding device s (its nodeList filled in by the pipeline-stages pass).
PartitionConfig pipelinePartitionConfig(uint32_t stages, uint32_t numCores);

}  // namespace qaic::compiler
