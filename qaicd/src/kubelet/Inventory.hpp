// SPDX-License-Identifier: Apache-2.0
// What qaicd offers the kubelet, as an immutable snapshot the event loop builds and publishes
// (InventoryChannel) and the gRPC threads read: per resource, its units (whole devices, or
// profile partitions) with their health and NUMA node. Allocate and GetPreferredAllocation are
// answered from a snapshot alone, by the pure functions below, so no gRPC thread ever touches
// the registry or waits for the event loop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qaic::qaicd {

struct Unit {
  std::string id;  // stable: "<device id>" or "<device id>-<profile>-<slot>"
  bool healthy = false;
  std::optional<int64_t> numaNode;
  uint32_t device = 0;           // the parent device's index
  std::optional<uint32_t> node;  // accel index handed out: the device, or its partition (absent: not there now)
  // The device's peer-to-peer group, named by its lowest device index (a device without peers is
  // a group of its own): GetPreferredAllocation keeps a pod's devices in as few groups as it can.
  uint32_t p2pGroup = 0;
  bool operator==(const Unit&) const = default;
};

struct ResourceInventory {
  std::string name;         // "qualcomm.com/qaic"
  bool partitions = false;  // units are partitions (QAIC_PARTITION is set)
  std::vector<Unit> units;
  bool operator==(const ResourceInventory&) const = default;
  const Unit* find(std::string_view id) const;
};

struct Inventory {
  uint64_t generation = 0;
  std::filesystem::path root;               // qaicd's root ("/" on a real machine)
  bool emulated = false;                    // root is not "/": nodes are qaic-emu's files
  bool deviceSpecs = true;                  // false (--kubelet-mounts-only): emulated nodes as mounts only
  std::map<uint32_t, std::string> shmDirs;  // emulated: device index -> its qaic-emu/shm_dir
  std::vector<ResourceInventory> resources;
  const ResourceInventory* find(std::string_view resource) const;
  bool sameOffer(const Inventory& other) const {
    return root == other.root && emulated == other.emulated && deviceSpecs == other.deviceSpecs &&
           shmDirs == other.shmDirs && resources == other.resources;
  }
};

// One device as the plugin offers it: what it read of the device once, and its health now.
struct OfferedDevice {
  uint32_t index = 0;
  std::string id;  // its PCI address, else "accel<index>"
  std::optional<int64_t> numaNode;
  std::string shmDir;  // emulated: qaic-emu's shared-memory directory
  bool healthy = false;
  std::string profile;               // the k8s profile it is given to; empty: offered whole
  uint32_t slots = 0;                // the profile's partitions it holds
  std::vector<uint32_t> p2pPeers{};  // the devices it reaches peer to peer (qaic-emu/p2p_peers)
};

// One of the registry's partitions: only static ones labelled "k8s:<profile>:<slot>" are units.
struct OfferedPartition {
  uint32_t id = 0;  // its accel index
  uint32_t device = 0;
  std::string label;
  bool isStatic = false;
};

// What the kubelet is offered: the whole-device resource (devices without a profile), then one
// resource per profile in `profiles`' order, each listing every slot of every device given to
// it ("<device id>-<profile>-<slot>"), present (healthy if the device is) when a partition of
// its label is on that device, else Unhealthy without a node. `base` brings root, emulated and
// deviceSpecs.
Inventory offerInventory(Inventory base, const std::vector<std::string>& profiles,
                         const std::vector<OfferedDevice>& devices, const std::vector<OfferedPartition>& partitions);

// A refused request: which gRPC status it maps to and a message naming the ID or field.
struct Refusal {
  enum class Code { InvalidArgument, Unavailable };
  Code code = Code::InvalidArgument;
  std::string message;
};

struct ContainerAllocation {
  struct DeviceSpec {
    std::string containerPath, hostPath, permissions;
  };
  struct MountSpec {
    std::string containerPath, hostPath;
    bool readOnly = false;
  };
  std::map<std::string, std::string> envs;
  std::vector<DeviceSpec> devices;
  std::vector<MountSpec> mounts;
};

// One container's Allocate: each ID must be a unit of `resource`, named once, and present now.
std::variant<ContainerAllocation, Refusal> allocateContainer(const Inventory& inventory,
                                                             const ResourceInventory& resource,
                                                             const std::vector<std::string>& ids);

// GetPreferredAllocation for one container: `size` units out of `available` (which must hold
// `mustInclude`), in as few peer-to-peer groups as possible (all in one when a group can hold
// them), and within a group on as few devices as possible: the groups and devices of mustInclude
// first, then the group that fits the rest most tightly (else the one with the most free units,
// and again); inside it the device that fits most tightly (else the fullest one, and again); at
// each step preferring the NUMA node of what is already chosen. Ties go to the lowest index, so
// the same request gets the same answer.
std::variant<std::vector<std::string>, Refusal> preferredAllocation(const ResourceInventory& resource,
                                                                    const std::vector<std::string>& available,
                                                                    const std::vector<std::string>& mustInclude,
                                                                    int64_t size);

// Text from the kubelet as quoted in messages and logs: at most `shown` bytes, non-printable
// bytes (and quotes, backslashes) as \xNN, the length said when it is longer.
std::string quoteText(std::string_view text, std::size_t shown);
// An ID as quoted in messages: quoteText(id, 64).
std::string quoteId(std::string_view id);

}  // namespace qaic::qaicd
