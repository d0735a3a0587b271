// SPDX-License-Identifier: Apache-2.0
// qaic-emu's configuration: the emulated devices and the device-node policy. The JSON format is
// documented in docs/emulator.md; every field is optional and falls back to an AIC100-like card.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "ModuleParameters.hpp"

namespace qaic::emu {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FaultConfig {
  bool nspHang = false;
  uint16_t dmaFailCode = 0;  // completion code of the next dmaFailCount requests
  uint32_t dmaFailCount = 0;
};

struct DeviceConfig {
  uint32_t nsps = 16;
  uint32_t dbcs = 16;
  uint32_t mcids = 24;
  uint32_t semaphores = 512;
  uint64_t ddrMb = 16384;
  std::string sku = "AIC100 PCIe 16NSP";
  std::string fwVersion = "1.12.2.0";
  std::string hwVersion = "2.1.0";
  uint32_t nspFrequencyMhz = 1450;
  // What qaic-util -q shows of a card's identity and telemetry, as an AIC100 PCIe card reports
  // them. Empty strings are derived from the device index or fw_version (configDefaults()).
  std::string serial;             // HW Serial, "0x..." (default from the device index)
  std::string boardSerial;        // Board serial (default from the device index)
  std::string fwQcImageVersion;   // default QSM.AIC.<fw_version>
  std::string fwOemImageVersion;  // empty on Qualcomm's own images
  std::string fwImageVariant = "AIC100.REL";
  std::string nspQcImageVersion;  // default QNSP.AIC.<fw_version>
  std::string nspImageVariant = "aic100.nsp.prodQ";
  // Device Capabilities, in order: name -> supported. HybridBoot is off. MDP (multi-device
  // partitioning) says the card has peer-to-peer links to other cards that a multi-device program
  // runs on (docs/emulator.md, "Multi-device programs"): resolveP2pGroups sets it for a device in
  // a p2p group of 2 or more, unless `capabilities` in the configuration names MDP itself.
  std::vector<std::pair<std::string, bool>> capabilities{{"HybridBoot", false}, {"MDP", false}, {"ECC", true}};
  bool mdpConfigured = false;  // the configuration's capabilities named MDP: kept as written
  // The other devices of its p2p group (indices, ascending); filled in by resolveP2pGroups.
  std::vector<uint32_t> p2pPeers;
  std::string maxLinkSpeed = "16.0 GT/s PCIe";  // the PCI function's max_link_speed (Gen4)
  uint32_t maxLinkWidth = 8;
  std::string currentLinkSpeed = "16.0 GT/s PCIe";
  uint32_t currentLinkWidth = 8;
  uint32_t ddrFrequencyMhz = 2133;
  // Telemetry (hwmon): board power rises with the NSPs in use, the SoC temperature with the power.
  double idlePowerW = 20.0;
  double powerPerNspW = 3.4;
  double tdpCapW = 75.0;
  double idleTemperatureC = 36.0;
  double degreesPerW = 0.45;
  std::optional<uint32_t> numaNode;  // device/numa_node; unset reads -1 (unknown), as on a host without NUMA
  FaultConfig faults;
};

// Who may open the device nodes. Unset fields follow the default policy: group `qaic` with 0660
// when that group exists, else root:root 0666.
struct NodePolicy {
  std::optional<uint32_t> mode;
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
};

// Cards that reach each other's memory peer to peer (behind one PCIe switch): lists of device
// indices, no device in two groups. Unset: every device of the emulator in one group.
using P2pGroups = std::vector<std::vector<uint32_t>>;

struct EmuConfig {
  std::vector<DeviceConfig> devices{DeviceConfig{}};
  std::optional<P2pGroups> p2pGroups;  // "p2p_groups" or --p2p-groups
  NodePolicy nodes;
  uint32_t semaphoreTimeoutMs = 10000;     // longest a semaphore WAIT element blocks a channel
  uint32_t computeThreads = 0;             // host threads all NSPs compute on at once; 0: the host's cores
  ModuleParameterValues moduleParameters;  // sys/module/qaic/parameters at start
  bool passthrough = true;                 // false: --no-passthrough (mmap of a node is ENODEV)
};

// Parses the JSON text; `source` names the file in messages. Throws ConfigError naming the field.
EmuConfig parseConfig(std::string_view jsonText, std::string_view source);

// Checks the groups against the devices (an index out of range, a device in two groups or twice
// in one; `field` names them in messages, "p2p_groups" or "--p2p-groups") and gives each device
// its peers and MDP capability. Run once the device count is final (after --devices).
void resolveP2pGroups(EmuConfig& config, std::string_view source, std::string_view field = "p2p_groups");

// --p2p-groups' text: groups separated by ':', indices by ',' ("0,1:2,3"); "none": every device
// alone. Throws ConfigError naming the option.
P2pGroups parseP2pGroupsOption(std::string_view text);

// Fills the identity strings a device's configuration left empty: serials from its index,
// image versions from fw_version.
DeviceConfig completeIdentity(DeviceConfig device, uint32_t index);
EmuConfig loadConfig(const std::string& path);

// Resolves the policy against the host's groups: {mode, uid, gid}.
struct ResolvedNodePolicy {
  uint32_t mode;
  uid_t uid;
  gid_t gid;
};
ResolvedNodePolicy resolveNodePolicy(const NodePolicy& policy);

}  // namespace qaic::emu
