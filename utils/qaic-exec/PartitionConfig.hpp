// SPDX-License-Identifier: Apache-2.0
// -mdp-load-partition-config / -mdp-dump-partition-config: the vendor's multi-device partition
// config (docs/formats/partition-config.md), as efficient-transformers writes it:
//   {"connections": [{"devices": [0, 1], "type": "p2p"}],
//    "partitions": [{"name": "Partition0",
//                    "devices": [{"deviceId": 0, "numCores": 16}, {"deviceId": 1, "numCores": 16}]}]}
// qaic-exec reads, checks and writes it; the network is not yet split over its devices.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qaic::compiler {

// The NSPs of one card: the most numCores a device of a partition can ask for.
inline constexpr uint32_t kNspsPerCard = 16;
// Device IDs are QIDs; the emulator has at most 64 cards, a host rarely more than a few dozen.
inline constexpr uint32_t kMaxPartitionDeviceId = 1023;

struct PartitionDevice {
  uint32_t deviceId = 0;
  uint32_t numCores = 0;
  bool operator==(const PartitionDevice&) const = default;
};

struct Partition {
  std::string name;
  std::vector<PartitionDevice> devices;
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
  std::vector<Partition> partitions;  // exactly one once checked
  bool operator==(const PartitionConfig&) const = default;

  // The devices of the (one) partition.
  std::size_t deviceCount() const { return partitions.empty() ? 0 : partitions.front().devices.size(); }
};

// Checks everything qaic-exec relies on; throws CompileError naming the file and the JSON path
// of the field ("cfg.json: partitions[0].devices[1].numCores: 17 is more than a card's 16 NSPs").
PartitionConfig parsePartitionConfig(std::string_view jsonText, const std::string& fileName);
PartitionConfig readPartitionConfig(const std::string& path);

// The JSON text writePartitionConfig writes (keys sorted, as efficient-transformers writes them).
std::string partitionConfigJson(const PartitionConfig& config);
// Writes the file atomically; throws CompileError naming it.
void writePartitionConfig(const std::string& path, const PartitionConfig& config);

// `devices` devices 0..devices-1, each with `numCores` NSPs, all in one p2p connection, one
// partition "Partition0": what -mdp-pipeline-stages=N and a single-device compile use.
PartitionConfig uniformPartitionConfig(uint32_t devices, uint32_t numCores);

}  // namespace qaic::compiler
