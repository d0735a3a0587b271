// SPDX-License-Identifier: Apache-2.0
// The byte format of a kubelet_service fuzz input (read as FuzzInput.hpp says), shared by the
// harness and the seed generator. An input is a node, then a sequence of calls:
//   node:   flags (kEmulated, kMountsOnly, kNoInventoryYet), profile count, each profile (name
//           length and bytes, DevicesKind and its indices, per_device byte, NSPs per partition),
//           device count,
//           each device (index gap, IdKind, NUMA byte (0xff: unknown), health bit, NSPs it
//           has), partition count, each partition (device, slot, LabelKind, static bit)
//   calls:  one Call byte, then a resource byte (its index; past the last: a resource qaicd
//           does not serve) and the call's fields in the order the harness reads them.
// The node goes through qaicd's own code (parseK8sProfiles, partitionsPerDevice,
// offerInventory), so the inventories served are ones qaicd can publish.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "FuzzInput.hpp"
#include "kubelet/Inventory.hpp"
#include "kubelet/Profiles.hpp"

namespace qaic::fuzz {

inline constexpr uint8_t kEmulated = 1u << 0;
inline constexpr uint8_t kMountsOnly = 1u << 1;
inline constexpr uint8_t kNoInventoryYet = 1u << 2;  // nothing published before the first Republish
inline constexpr uint8_t kUnknownNuma = 0xff;

enum class DevicesKind : uint8_t { Absent, All, Indices, NotAnArray, Count };
enum class IdKind : uint8_t { Pci, Accel, Count };
// A partition's label: its own profile's slot label, another profile's, a static partition's,
// or bytes from the input.
enum class LabelKind : uint8_t { OwnProfile, OtherProfile, Static, Raw, Count };

enum class Call : uint8_t {
  Options,
  Watch,            // one ListAndWatch stream, ended after its first answer
  Republish,        // the node changes (health, a partition gone or back): a new inventory
  PreferredBuilt,   // GetPreferredAllocation built field by field
  PreferredParsed,  // ... parsed from input bytes
  AllocateBuilt,    // Allocate built field by field
  AllocateParsed,   // ... parsed from input bytes
  PreStartParsed,   // PreStartContainer parsed from input bytes
  Count
};

// A device ID in a built request.
enum class IdPick : uint8_t {
  Unit,           // a unit of the resource (index byte)
  Repeat,         // one named before in the same list
  Raw,            // length byte and bytes
  Empty,          //
  Long,           // u16 length of 'x'
  OtherResource,  // a unit of another resource (index byte)
  Count
};
// A count byte of 0xff means kHugeCount IDs (or containers): beyond any node's units.
inline constexpr uint8_t kHugeByte = 0xff;
inline constexpr int kHugeCount = 5000;
inline constexpr int kHugeContainers = 300;
enum class SizePick : uint8_t { Zero, Negative, Max, Min, Small, Count };

// The node as read from the input, and the inventory qaicd publishes for it.
struct Node {
  qaicd::Inventory base;
  std::vector<qaicd::K8sProfile> profiles;  // empty when the input's k8s_profiles were refused
  std::string profilesJson;
  std::string profilesError;  // the ConfigError of a refused k8s_profiles
  std::vector<qaicd::OfferedDevice> devices;
  std::vector<qaicd::OfferedPartition> partitions;
  std::vector<std::string> profileNames() const;
  qaicd::Inventory offer() const;
};

Node readNode(InputReader& in);
// A change of the node (Call::Republish): the health of a device, or a partition removed or
// made again.
void changeNode(Node& node, InputReader& in);

class KubeletInputWriter : public InputWriterBase<KubeletInputWriter> {
 public:
  KubeletInputWriter& text(const std::string& s) {
    u8(static_cast<uint8_t>(s.size()));
    return bytes(s.data(), s.size());
  }
};

}  // namespace qaic::fuzz
