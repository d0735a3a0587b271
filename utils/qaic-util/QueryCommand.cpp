// SPDX-License-Identifier: Apache-2.0
#include "QueryCommand.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include <qaic/Util.hpp>

#include "QaicdAccess.hpp"
#include "base/AtomicFile.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "driver/SysfsDevice.hpp"

namespace qaic::util {
namespace {

// What qaicd says about the partitions, by id; empty without qaicd (the sys tree still has the
// rest).
using LeaseMap = std::map<unsigned, qaicd::PartitionInfo>;

LeaseMap leasesFromQaicd(const std::vector<rt::QDevInfo>& devices) {
  LeaseMap leases;
  bool anyPartition = false;
  for (const auto& d : devices) anyPartition = anyPartition || d.partition.has_value();
  if (!anyPartition) return leases;
  auto connection = connectQaicd(std::chrono::seconds(2));
  if (!connection.client) return leases;
  auto listed = connection.client->list();
  if (!listed) return leases;
  for (auto& p : *listed) leases.emplace(p.id, std::move(p));
  return leases;
}

std::string holderText(const qaicd::PartitionInfo& lease) {
  if (lease.isStatic) return "static (qaicd configuration)";
  const std::string name = processName(lease.holderPid);
  return "pid " + std::to_string(lease.holderPid) + (name.empty() ? "" : " (" + name + ")") + ", uid " +
         std::to_string(lease.ownerUid) + ", lease from qaicd";
}

std::string fixed2(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

// The cards a device reaches peer to peer, from its sysfs (the emulator's qaic-emu/p2p_peers);
// nullopt where the device publishes no topology, as a real card's driver.
std::optional<std::vector<uint32_t>> p2pPeersOf(rt::QID id) {
  return driver::readP2pPeers(driver::SysfsDevice(driver::DeviceRoot::fromEnvironment(), id));
}

constexpr const char* kP2pPeersLabel = "P2P Peers";

// The -q lines of one device, in the vendor tool's order and spelling; filters match on them.
// Identity and telemetry lines appear where the kernel (or qaic-emu) has the attribute.
Fields queryFields(const rt::QDevInfo& s, const LeaseMap& leases) {
  Fields f;
  auto add = [&](const char* label, const std::string& value) { f.emplace_back(label, value); };
  auto addIf = [&](const char* label, const std::string& value) {
    if (!value.empty()) add(label, value);
  };
  auto number = [](uint64_t v) { return std::to_string(v); };
  add("Status", s.status);
  add("PCI Address", s.pciAddress);
  add("PCI Info", "Vendor " + s.pciVendor + " Device " + s.pciDevice);
  add("HW Version", s.hwVersion);
  addIf("HW Serial", s.hwSerial);
  add("FW Version", s.fwVersion);
  addIf("FW QC_IMAGE_VERSION", s.fwQcImageVersion);
  if (!s.fwQcImageVersion.empty()) add("FW OEM_IMAGE_VERSION", s.fwOemImageVersion);
  addIf("FW IMAGE_VARIANT", s.fwImageVariant);
  addIf("NSP Version", s.nspVersion);
  addIf("NSP QC_IMAGE_VERSION", s.nspQcImageVersion);
  addIf("NSP IMAGE_VARIANT", s.nspImageVariant);
  add("Dram Total", number(s.dramTotalMb) + " MB");
  add("Dram Free", number(s.dramFreeMb) + " MB");
  add("Vc Total", number(s.vcTotal));
  add("Vc Free", number(s.vcFree));
  add("Nsp Total", number(s.nspTotal));
  add("Nsp Free", number(s.nspFree));
  add("MCID Total", number(s.mcidTotal));
  add("MCID Free", number(s.mcidFree));
  add("Semaphore Total", number(s.semTotal));
  add("Semaphore Free", number(s.semFree));
  add("Constants Loaded", number(s.constantsLoaded));
  add("Constants In-Use", number(s.constantsInUse));
  add("Networks Loaded", number(s.networksLoaded));
  add("Networks Active", number(s.networksActive));
  add("NSP Frequency(Mhz)", number(s.nspFrequencyMhz));
  addIf("DDR Frequency(Mhz)", s.ddrFrequencyMhz);
  add("Sku Type", s.sku);
  addIf("Device Capabilities", s.deviceCapabilities);
  if (auto peers = p2pPeersOf(s.id)) {
    std::string text;
    for (uint32_t peer : *peers) text += (text.empty() ? "" : " ") + std::to_string(peer);
    add(kP2pPeersLabel, text.empty() ? "none" : text);
  }
  addIf("Max Link Speed", s.maxLinkSpeed);
  if (!s.maxLinkWidth.empty()) add("Max Link Width", "x" + s.maxLinkWidth);
  addIf("Current Link Speed", s.currentLinkSpeed);
  if (!s.currentLinkWidth.empty()) add("Current Link Width", "x" + s.currentLinkWidth);
  for (std::size_t i = 0; i < s.dbcStates.size(); ++i)
    f.emplace_back("DBC" + std::to_string(i) + " State", s.dbcStates[i]);
  addIf("Board serial", s.boardSerial);
  if (s.socTemperatureC) add("SoC temperature(degree C)", fixed2(*s.socTemperatureC));
  if (s.boardPowerW) add("Board power(Watts)", fixed2(*s.boardPowerW));
  if (s.tdpCapW) add("TDP Cap(Watts)", fixed2(*s.tdpCapW));
  if (s.partition) {
    add("Parent QID", number(s.partition->parent));
    add("Owner UID", number(s.partition->ownerUid));
    add("Owner GID", number(s.partition->ownerGid));
    add("Mode", s.partition->mode);
    add("Holder PID", std::to_string(s.partition->holderPid));
    add("Label", s.partition->label);
    if (auto lease = leases.find(s.id); lease != leases.end()) add("Holder", holderText(lease->second));
  }
  return f;
}

void printQuery(const rt::QDevInfo& s, const LeaseMap& leases, std::ostream& out) {
  out << "QID " << s.id << "\n";
  for (const auto& [label, value] : queryFields(s, leases)) out << "\t" << label << ":" << value << "\n";
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<double> leadingNumber(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  return value;
}

bool matches(const QueryFilter& filter, const Fields& fields) {
  const std::string field = lower(filter.field);
  for (const auto& [label, value] : fields) {
    if (lower(label) != field) continue;
    bool same = value == filter.value;
    // A number on its own matches a numeric field whatever its unit: "16384" matches "16384 MB".
    char* end = nullptr;
    const double wanted = std::strtod(filter.value.c_str(), &end);
    if (!same && !filter.value.empty() && *end == '\0')
      if (auto actual = leadingNumber(value)) same = *actual == wanted;
    return same == filter.equal;
  }
  return !filter.equal;  // a device without the field is not equal to any value
}

// Every label -q can print, for naming the choices when a filter's field is unknown.
std::vector<std::string> knownFields() {
  rt::QDevInfo full;
  full.hwSerial = full.boardSerial = full.fwQcImageVersion = full.fwImageVariant = full.nspVersion = "x";
  full.nspQcImageVersion = full.nspImageVariant = full.deviceCapabilities = full.ddrFrequencyMhz = "x";
  full.maxLinkSpeed = full.maxLinkWidth = full.currentLinkSpeed = full.currentLinkWidth = "x";
  full.socTemperatureC = full.boardPowerW = full.tdpCapW = 0.0;
  full.partition = rt::QDevPartitionInfo{};
  qaicd::PartitionInfo lease;
  std::vector<std::string> names;
  for (const auto& [label, value] : queryFields(full, LeaseMap{{0, lease}})) names.push_back(label);
  if (std::find(names.begin(), names.end(), kP2pPeersLabel) == names.end()) names.push_back(kP2pPeersLabel);
  return names;
}

nlohmann::json toJson(const rt::QDevInfo& s, const LeaseMap& leases) {
  nlohmann::json j = {{"qid", s.id},
                      {"status", s.status},
                      {"pci_address", s.pciAddress},
                      {"pci_vendor", s.pciVendor},
                      {"pci_device", s.pciDevice},
                      {"hw_version", s.hwVersion},
                      {"fw_version", s.fwVersion},
                      {"dram_total_mb", s.dramTotalMb},
                      {"dram_free_mb", s.dramFreeMb},
                      {"vc_total", s.vcTotal},
                      {"vc_free", s.vcFree},
                      {"nsp_total", s.nspTotal},
                      {"nsp_free", s.nspFree},
                      {"mcid_total", s.mcidTotal},
                      {"mcid_free", s.mcidFree},
                      {"semaphore_total", s.semTotal},
                      {"semaphore_free", s.semFree},
                      {"constants_loaded", s.constantsLoaded},
                      {"constants_in_use", s.constantsInUse},
                      {"networks_loaded", s.networksLoaded},
                      {"networks_active", s.networksActive},
                      {"nsp_frequency_mhz", s.nspFrequencyMhz},
                      {"sku", s.sku},
                      {"dbc_states", s.dbcStates}};
  auto optionalText = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  optionalText("hw_serial", s.hwSerial);
  optionalText("board_serial", s.boardSerial);
  optionalText("fw_qc_image_version", s.fwQcImageVersion);
  if (!s.fwQcImageVersion.empty()) j["fw_oem_image_version"] = s.fwOemImageVersion;
  optionalText("fw_image_variant", s.fwImageVariant);
  optionalText("nsp_version", s.nspVersion);
  optionalText("nsp_qc_image_version", s.nspQcImageVersion);
  optionalText("nsp_image_variant", s.nspImageVariant);
  optionalText("device_capabilities", s.deviceCapabilities);
  if (auto peers = p2pPeersOf(s.id)) j["p2p_peers"] = *peers;
  optionalText("ddr_frequency_mhz", s.ddrFrequencyMhz);
  optionalText("max_link_speed", s.maxLinkSpeed);
  optionalText("max_link_width", s.maxLinkWidth);
  optionalText("current_link_speed", s.currentLinkSpeed);
  optionalText("current_link_width", s.currentLinkWidth);
  if (s.socTemperatureC) j["soc_temperature_c"] = *s.socTemperatureC;
  if (s.boardPowerW) j["board_power_w"] = *s.boardPowerW;
  if (s.tdpCapW) j["tdp_cap_w"] = *s.tdpCapW;
  if (s.partition) {
    j["partition"] = {{"parent", s.partition->parent},        {"owner_uid", s.partition->ownerUid},
                      {"owner_gid", s.partition->ownerGid},   {"mode", s.partition->mode},
                      {"holder_pid", s.partition->holderPid}, {"label", s.partition->label}};
    if (auto lease = leases.find(s.id); lease != leases.end()) {
      j["partition"]["holder"] = {{"static", lease->second.isStatic},
                                  {"pid", lease->second.holderPid},
                                  {"name", processName(lease->second.holderPid)},
                                  {"uid", lease->second.ownerUid}};
      j["partition"]["ddr_bytes"] = lease->second.resources.ddrSize;
    }
  }
  return j;
}

void printTable(const std::vector<rt::QDevInfo>& devices, std::ostream& out) {
  out << std::left << std::setw(5) << "QID" << std::setw(14) << "Status" << std::setw(18) << "NSP Used / Total"
      << std::setw(20) << "NW Loaded / Active" << std::setw(22) << "DRAM Used / Total"
      << "Partition of"
      << "\n";
  for (const auto& s : devices) {
    auto pair = [](uint64_t a, uint64_t b) { return std::to_string(a) + " / " + std::to_string(b); };
    out << std::setw(5) << s.id << std::setw(14) << s.status << std::setw(18)
        << pair(s.nspTotal - s.nspFree, s.nspTotal) << std::setw(20) << pair(s.networksLoaded, s.networksActive)
        << std::setw(22) << (pair(s.dramTotalMb - s.dramFreeMb, s.dramTotalMb) + " MB")
        << (s.partition ? "QID " + std::to_string(s.partition->parent) : std::string("-")) << "\n";
  }
}

// Sleeps up to `seconds`; false when SIGINT or SIGTERM cut the sleep short.
bool sleepUnlessInterrupted(unsigned seconds) {
  sigset_t none;
  sigemptyset(&none);
  timespec timeout{static_cast<time_t>(seconds), 0};
  int rc = ppoll(nullptr, 0, &timeout, &none);
  return !(rc < 0 && errno == EINTR);
}

volatile sig_atomic_t interrupted = 0;
void onSignal(int) { interrupted = 1; }

}  // namespace

int runQueryCommand(const QueryRequest& request, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> fields = knownFields();
  for (const auto& filter : request.filters) {
    bool known = false;
    for (const auto& name : fields) known = known || lower(name) == lower(filter.field);
    if (known) continue;
    std::string list;
    for (const auto& name : fields)
      if (name.rfind("DBC", 0) != 0 || name == "DBC0 State") list += (list.empty() ? "" : ", ") + name;
    err << "qaic-util: error: -f: unknown field '" << filter.field << "'; fields: " << list << "\n";
    return 2;
  }
  const auto root = driver::DeviceRoot::fromEnvironment();
  std::vector<unsigned> ids = request.devices;
  if (ids.empty()) ids = root.listDevices();
  if (const std::string lost = root.lostServer(); !lost.empty()) {
    err << "qaic-util: error: " << lost << "\n";
    return 1;
  }
  if (ids.empty()) {
    err << "qaic-util: error: no devices under " << root.path().string()
        << "/dev/accel (is qaic-emu running? QAIC_ROOT selects the root)\n";
    return 1;
  }
  auto readAll = [&](std::vector<rt::QDevInfo>& devices) {
    devices.clear();
    for (unsigned id : ids) {
      try {
        devices.push_back(rt::Util::getDeviceInfo(id));
      } catch (const std::exception& e) {
        // A partition listed a moment ago may have been released since; only a device or a
        // partition asked for by -d is an error when it cannot be read. One that is still there
        // but not this user's to open is named, not shown.
        const bool listedPartition = request.devices.empty() && id >= driver::kFirstPartitionId;
        if (!listedPartition) {
          // Scripts that probe -d 0, 1, 2... stop at this line (the vendor tool's words).
          if (!request.devices.empty() && !std::filesystem::exists(root.nodePath(id)))
            out << "Failed to find requested device ID " << id << "\n";
          throw;
        }
        std::error_code ec;
        if (std::filesystem::exists(root.nodePath(id), ec)) err << "qaic-util: note: " << e.what() << " (not shown)\n";
      }
    }
    if (request.filters.empty()) return;
    const LeaseMap none;
    std::erase_if(devices, [&](const rt::QDevInfo& s) {
      const Fields f = queryFields(s, none);
      for (const auto& filter : request.filters)
        if (!matches(filter, f)) return true;
      return false;
    });
  };

  try {
    std::vector<rt::QDevInfo> devices;
    if (!request.refreshSeconds) {
      readAll(devices);
      const LeaseMap leases = leasesFromQaicd(devices);
      if (request.json) {
        // Partitions apart, so that "devices" keeps counting whole devices.
        nlohmann::json list = nlohmann::json::array(), partitions = nlohmann::json::array();
        for (const auto& s : devices) (s.partition ? partitions : list).push_back(toJson(s, leases));
        const std::string text = nlohmann::json{{"devices", list}, {"partitions", partitions}}.dump(2) + "\n";
        if (request.jsonFile.empty()) {
          out << text;
        } else {
          try {
            writeFileAtomically(request.jsonFile, text);
          } catch (const AtomicWriteError& e) {
            err << "qaic-util: error: -j: " << e.what() << "\n";
            return 1;
          }
        }
      } else {
        for (const auto& s : devices) printQuery(s, leases, out);
      }
      return 0;
    }
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    for (unsigned frame = 0; !interrupted; ++frame) {
      if (request.refreshCount && frame >= *request.refreshCount) break;
      if (frame > 0 && !sleepUnlessInterrupted(*request.refreshSeconds)) break;
      readAll(devices);
      if (frame > 0 && &out == &std::cout && isatty(STDOUT_FILENO)) out << "\033[H\033[J";
      printTable(devices, out);
      out.flush();
    }
    return 0;
  } catch (const std::exception& e) {
    err << "qaic-util: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace qaic::util
