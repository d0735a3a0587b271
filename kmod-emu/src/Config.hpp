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
  // Device Capabilities, in order: name -> supported. The emulator runs no multi-device network,
  // so HybridBoot and MDP (multi-device partitioning) are off.
  std::vector<std::pair<std::string, bool>> capabilities{{"HybridBoot", false}, {"MDP", false}, {"ECC", true}};
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

struct EmuConfig {
  std::vector<DeviceConfig> devices{DeviceConfig{}};
  NodePolicy nodes;
  uint32_t semaphoreTimeoutMs = 10000;     // longest a semaphore WAIT element blocks a channel
  uint32_t computeThreads = 0;             // host threads all NSPs compute on at once; 0: the host's cores
  ModuleParameterValues moduleParameters;  // sys/module/qaic/parameters at start
  bool passthrough = true;                 // false: --no-passthrough (mmap of a node is ENODEV)
};

// Parses the JSON text; `source` names the file in messages. Throws ConfigError naming the field.
EmuConfig parseConfig(std::string_view jsonText, std::string_view source);

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
