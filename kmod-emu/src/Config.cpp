// SPDX-License-Identifier: Apache-2.0
#include "Config.hpp"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ConfigError(std::string(source_) + ": " + field + ": " + what);
  }

  uint64_t unsignedField(const json& obj, const char* key, const std::string& path, uint64_t min, uint64_t max,
                         uint64_t fallback) const {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_number_unsigned()) fail(path + key, "expected a non-negative integer");
    uint64_t v = it->get<uint64_t>();
    if (v < min || v > max)
      fail(path + key,
           "value " + std::to_string(v) + " outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return v;
  }

  double numberField(const json& obj, const char* key, const std::string& path, double min, double max,
                     double fallback) const {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_number()) fail(path + key, "expected a number");
    const double v = it->get<double>();
    if (!(v >= min && v <= max))
      fail(path + key,
           "value " + std::to_string(v) + " outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return v;
  }

  std::string stringField(const json& obj, const char* key, const std::string& path,
                          const std::string& fallback) const {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_string()) fail(path + key, "expected a string");
    return it->get<std::string>();
  }

  void onlyKeys(const json& obj, std::initializer_list<const char*> keys, const std::string& path) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known = known || it.key() == k;
      if (!known) fail(path + it.key(), "unknown field");
    }
  }

 private:
  std::string_view source_;
};

FaultConfig parseFaults(const Reader& r, const json& obj, const std::string& path) {
  if (!obj.is_object()) r.fail(path, "expected an object");
  r.onlyKeys(obj, {"nsp_hang", "dma_fail_code", "dma_fail_count"}, path + ".");
  FaultConfig f;
  if (auto it = obj.find("nsp_hang"); it != obj.end()) {
    if (!it->is_boolean()) r.fail(path + ".nsp_hang", "expected true or false");
    f.nspHang = it->get<bool>();
  }
  f.dmaFailCode = static_cast<uint16_t>(
      r.unsignedField(obj, "dma_fail_code", path + ".", 0, driver::DBC_COMPLETION_ABORTED, 0));
  f.dmaFailCount = static_cast<uint32_t>(
      r.unsignedField(obj, "dma_fail_count", path + ".", 0, 1u << 30, f.dmaFailCode ? 1 : 0));
  return f;
}

DeviceConfig parseDevice(const Reader& r, const json& obj, const std::string& path) {
  if (!obj.is_object()) r.fail(path, "expected an object");
  r.onlyKeys(obj,
             {"nsps",
              "dbcs",
              "mcids",
              "semaphores",
              "ddr_mb",
              "sku",
              "fw_version",
              "hw_version",
              "nsp_frequency_mhz",
              "numa_node",
              "faults",
              "serial",
              "board_serial",
              "fw_qc_image_version",
              "fw_oem_image_version",
              "fw_image_variant",
              "nsp_qc_image_version",
              "nsp_image_variant",
              "capabilities",
              "max_link_speed",
              "max_link_width",
              "current_link_speed",
              "current_link_width",
              "ddr_frequency_mhz",
              "idle_power_w",
              "power_per_nsp_w",
              "tdp_cap_w",
              "idle_temperature_c",
              "degrees_per_w"},
             path + ".");
  DeviceConfig d;
  const std::string p = path + ".";
  d.nsps = static_cast<uint32_t>(r.unsignedField(obj, "nsps", p, 1, 64, d.nsps));
  d.dbcs = static_cast<uint32_t>(r.unsignedField(obj, "dbcs", p, 1, 64, d.dbcs));
  d.mcids = static_cast<uint32_t>(r.unsignedField(obj, "mcids", p, 0, 4096, d.mcids));
  d.semaphores = static_cast<uint32_t>(r.unsignedField(obj, "semaphores", p, 0, 1u << 20, d.semaphores));
  d.ddrMb = r.unsignedField(obj, "ddr_mb", p, 1, 1u << 20, d.ddrMb);
  d.sku = r.stringField(obj, "sku", p, d.sku);
  d.fwVersion = r.stringField(obj, "fw_version", p, d.fwVersion);
  d.hwVersion = r.stringField(obj, "hw_version", p, d.hwVersion);
  d.nspFrequencyMhz = static_cast<uint32_t>(r.unsignedField(obj, "nsp_frequency_mhz", p, 1, 100000, d.nspFrequencyMhz));
  if (obj.contains("numa_node")) d.numaNode = static_cast<uint32_t>(r.unsignedField(obj, "numa_node", p, 0, 1023, 0));
  if (auto it = obj.find("faults"); it != obj.end()) d.faults = parseFaults(r, *it, p + "faults");
  d.serial = r.stringField(obj, "serial", p, d.serial);
  d.boardSerial = r.stringField(obj, "board_serial", p, d.boardSerial);
  d.fwQcImageVersion = r.stringField(obj, "fw_qc_image_version", p, d.fwQcImageVersion);
  d.fwOemImageVersion = r.stringField(obj, "fw_oem_image_version", p, d.fwOemImageVersion);
  d.fwImageVariant = r.stringField(obj, "fw_image_variant", p, d.fwImageVariant);
  d.nspQcImageVersion = r.stringField(obj, "nsp_qc_image_version", p, d.nspQcImageVersion);
  d.nspImageVariant = r.stringField(obj, "nsp_image_variant", p, d.nspImageVariant);
  if (auto it = obj.find("capabilities"); it != obj.end()) {
    if (!it->is_object()) r.fail(p + "capabilities", "expected an object of name: true|false");
    d.capabilities.clear();
    for (auto c = it->begin(); c != it->end(); ++c) {
      if (!c->is_boolean()) r.fail(p + "capabilities." + c.key(), "expected true or false");
      if (c.key().empty() || c.key().find_first_of(" \t\n+-") != std::string::npos)
        r.fail(p + "capabilities." + c.key(), "a capability name is one word without + or -");
      d.capabilities.emplace_back(c.key(), c->get<bool>());
      d.mdpConfigured = d.mdpConfigured || c.key() == "MDP";
    }
  }
  d.maxLinkSpeed = r.stringField(obj, "max_link_speed", p, d.maxLinkSpeed);
  d.maxLinkWidth = static_cast<uint32_t>(r.unsignedField(obj, "max_link_width", p, 1, 32, d.maxLinkWidth));
  d.currentLinkSpeed = r.stringField(obj, "current_link_speed", p, d.currentLinkSpeed);
  d.currentLinkWidth = static_cast<uint32_t>(r.unsignedField(obj, "current_link_width", p, 1, 32, d.currentLinkWidth));
  d.ddrFrequencyMhz = static_cast<uint32_t>(r.unsignedField(obj, "ddr_frequency_mhz", p, 1, 100000, d.ddrFrequencyMhz));
  d.idlePowerW = r.numberField(obj, "idle_power_w", p, 0, 1000, d.idlePowerW);
  d.powerPerNspW = r.numberField(obj, "power_per_nsp_w", p, 0, 1000, d.powerPerNspW);
  d.tdpCapW = r.numberField(obj, "tdp_cap_w", p, 1, 1000, d.tdpCapW);
  d.idleTemperatureC = r.numberField(obj, "idle_temperature_c", p, -40, 125, d.idleTemperatureC);
  d.degreesPerW = r.numberField(obj, "degrees_per_w", p, 0, 10, d.degreesPerW);
  return d;
}

// "module_parameters": {"datapath_polling": true, "wait_exec_default_timeout_ms": 100, ...},
// what `modprobe qaic name=value ...` would set.
ModuleParameterValues parseModuleParameters(const Reader& r, const json& obj) {
  if (!obj.is_object()) r.fail("module_parameters", "expected an object");
  ModuleParameterValues values;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string field = "module_parameters." + it.key();
    std::string text;
    if (it.key() == "datapath_polling") {
      if (!it->is_boolean()) r.fail(field, "expected true or false");
      text = it->get<bool>() ? "Y" : "N";
    } else {
      if (!it->is_number_unsigned()) r.fail(field, "expected a non-negative integer");
      text = std::to_string(it->get<uint64_t>());
    }
    if (!ModuleParameters::parse(it.key(), text, values)) {
      bool known = false;
      for (const auto& p : ModuleParameters::all()) known = known || it.key() == p.name;
      r.fail(field, known ? "value " + text + " out of range" : "unknown module parameter");
    }
  }
  return values;
}

std::optional<uint32_t> parseId(const Reader& r, const json& obj, const char* key, const std::string& path,
                                bool isGroup) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint32_t>();
  if (!it->is_string()) r.fail(path + key, "expected a name or a numeric id");
  const std::string name = it->get<std::string>();
  if (isGroup) {
    if (const struct group* g = getgrnam(name.c_str())) return g->gr_gid;
  } else if (const passwd* u = getpwnam(name.c_str())) {
    return u->pw_uid;
  }
  r.fail(path + key, std::string("no ") + (isGroup ? "group" : "user") + " named '" + name + "'");
}

}  // namespace

EmuConfig parseConfig(std::string_view jsonText, std::string_view source) {
  Reader r(source);
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw ConfigError(std::string(source) + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) r.fail("(top level)", "expected an object");
  r.onlyKeys(root, {"devices", "nodes", "semaphore_timeout_ms", "compute_threads", "module_parameters", "p2p_groups"},
             "");
  EmuConfig cfg;
  if (auto it = root.find("devices"); it != root.end()) {
    if (!it->is_array() || it->empty() || it->size() > 64)
      r.fail("devices", "expected an array of 1 to 64 device objects");
    cfg.devices.clear();
    for (std::size_t i = 0; i < it->size(); ++i)
      cfg.devices.push_back(parseDevice(r, (*it)[i], "devices[" + std::to_string(i) + "]"));
  }
  if (auto it = root.find("nodes"); it != root.end()) {
    if (!it->is_object()) r.fail("nodes", "expected an object");
    r.onlyKeys(*it, {"mode", "owner", "group"}, "nodes.");
    if (auto m = it->find("mode"); m != it->end()) {
      if (!m->is_string()) r.fail("nodes.mode", "expected an octal string such as \"0660\"");
      const std::string text = m->get<std::string>();
      std::size_t used = 0;
      unsigned long mode = 0;
      try {
        mode = std::stoul(text, &used, 8);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || text.empty() || mode > 0777)
        r.fail("nodes.mode", "'" + text + "' is not an octal permission mode");
      cfg.nodes.mode = static_cast<uint32_t>(mode);
    }
    cfg.nodes.uid = parseId(r, *it, "owner", "nodes.", false);
    cfg.nodes.gid = parseId(r, *it, "group", "nodes.", true);
  }
  cfg.semaphoreTimeoutMs = static_cast<uint32_t>(
      r.unsignedField(root, "semaphore_timeout_ms", "", 1, 3600000, cfg.semaphoreTimeoutMs));
  if (auto it = root.find("module_parameters"); it != root.end()) cfg.moduleParameters = parseModuleParameters(r, *it);
  cfg.computeThreads = static_cast<uint32_t>(r.unsignedField(root, "compute_threads", "", 0, 256, cfg.computeThreads));
  if (auto it = root.find("p2p_groups"); it != root.end()) {
    if (!it->is_array()) r.fail("p2p_groups", "expected an array of arrays of device indices");
    P2pGroups groups;
    for (std::size_t g = 0; g < it->size(); ++g) {
      const std::string path = "p2p_groups[" + std::to_string(g) + "]";
      const json& group = (*it)[g];
      if (!group.is_array() || group.empty()) r.fail(path, "expected a non-empty array of device indices");
      groups.emplace_back();
      for (std::size_t i = 0; i < group.size(); ++i) {
        if (!group[i].is_number_unsigned() || group[i].get<uint64_t>() > 63)
          r.fail(path + "[" + std::to_string(i) + "]", "expected a device index, 0 to 63");
        groups.back().push_back(group[i].get<uint32_t>());
      }
    }
    cfg.p2pGroups = std::move(groups);
  }
  // Checked against the devices when the file lists them; else --devices or the default count
  // decides, and the emulator resolves the groups when it starts.
  if (root.contains("devices")) resolveP2pGroups(cfg, source);
  return cfg;
}

void resolveP2pGroups(EmuConfig& config, std::string_view source, std::string_view field) {
  const auto count = static_cast<uint32_t>(config.devices.size());
  P2pGroups groups;
  if (config.p2pGroups) {
    groups = *config.p2pGroups;
  } else {
    groups.emplace_back();
    for (uint32_t d = 0; d < count; ++d) groups.back().push_back(d);
  }
  const std::string where = std::string(source) + ": " + std::string(field);
  std::vector<std::optional<std::size_t>> groupOf(count);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].size(); ++i) {
      const uint32_t d = groups[g][i];
      const std::string at = where + "[" + std::to_string(g) + "][" + std::to_string(i) + "]";
      if (d >= count)
        throw ConfigError(at + ": device " + std::to_string(d) + " is out of range (the emulator has " +
                          std::to_string(count) +
                          (count == 1 ? " device, 0)" : " devices, 0 to " + std::to_string(count - 1) + ")"));
      if (groupOf[d])
        throw ConfigError(at + ": device " + std::to_string(d) +
                          (*groupOf[d] == g ? " is listed twice in the group"
                                            : " is already in group " + std::to_string(*groupOf[d])));
      groupOf[d] = g;
    }
  }
  for (uint32_t d = 0; d < count; ++d) {
    DeviceConfig& device = config.devices[d];
    device.p2pPeers.clear();
    if (groupOf[d])
      for (uint32_t peer : groups[*groupOf[d]])
        if (peer != d) device.p2pPeers.push_back(peer);
    std::sort(device.p2pPeers.begin(), device.p2pPeers.end());
    if (device.mdpConfigured) continue;
    const bool linked = !device.p2pPeers.empty();
    bool found = false;
    for (auto& [name, supported] : device.capabilities)
      if (name == "MDP") supported = linked, found = true;
    if (!found && linked) device.capabilities.emplace_back("MDP", true);
  }
}

P2pGroups parseP2pGroupsOption(std::string_view text) {
  const auto fail = [&](const std::string& what) -> ConfigError {
    return ConfigError("--p2p-groups '" + std::string(text) + "': " + what);
  };
  P2pGroups groups;
  if (text == "none") return groups;
  if (text.empty()) throw fail("expected groups such as 0,1:2,3, or none");
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    const std::string_view group = text.substr(start, end - start);
    groups.emplace_back();
    std::size_t at = 0;
    while (at <= group.size()) {
      const std::size_t comma = std::min(group.find(',', at), group.size());
      const std::string_view index = group.substr(at, comma - at);
      uint32_t value = 0;
      const auto [ptr, ec] = std::from_chars(index.data(), index.data() + index.size(), value);
      if (index.empty() || ec != std::errc() || ptr != index.data() + index.size() || value > 63)
        throw fail("'" + std::string(index) + "' is not a device index, 0 to 63");
      groups.back().push_back(value);
      at = comma + 1;
    }
    start = end + 1;
  }
  return groups;
}

DeviceConfig completeIdentity(DeviceConfig d, uint32_t index) {
  char text[32];
  if (d.serial.empty()) {
    std::snprintf(text, sizeof text, "0x%08x", 0x5e1a0000u + index);
    d.serial = text;
  }
  if (d.boardSerial.empty()) {
    std::snprintf(text, sizeof text, "QAICEMU%05u", index);
    d.boardSerial = text;
  }
  if (d.fwQcImageVersion.empty()) d.fwQcImageVersion = "QSM.AIC." + d.fwVersion;
  if (d.nspQcImageVersion.empty()) d.nspQcImageVersion = "QNSP.AIC." + d.fwVersion;
  return d;
}

EmuConfig loadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the configuration file");
  std::ostringstream text;
  text << in.rdbuf();
  return parseConfig(text.str(), path);
}

ResolvedNodePolicy resolveNodePolicy(const NodePolicy& policy) {
  ResolvedNodePolicy out{0666, 0, 0};
  if (const struct group* g = getgrnam("qaic")) {
    out.mode = 0660;
    out.gid = g->gr_gid;
  }
  if (policy.mode) out.mode = *policy.mode;
  if (policy.uid) out.uid = *policy.uid;
  if (policy.gid) out.gid = *policy.gid;
  return out;
}

}  // namespace qaic::emu
