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
  uint16_t dmaFailCode = 0;   // completion code of the next dmaFailCount requests
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
  uint32_t semaphoreTimeoutMs = 10000;  // longest a semaphore WAIT element blocks a channel
  ModuleParameterValues moduleParameters;  // sys/module/qaic/parameters at start
};

// Parses the JSON text; `source` names the file in messages. Throws ConfigError naming the field.
EmuConfig parseConfig(std::string_view jsonText, std::string_view source);
EmuConfig loadConfig(const std::string& path);

// Resolves the policy against the host's groups: {mode, uid, gid}.
struct ResolvedNodePolicy {
  uint32_t mode;
  uid_t uid;
  gid_t gid;
};
ResolvedNodePolicy resolveNodePolicy(const NodePolicy& policy);

}  // namespace qaic::emu
