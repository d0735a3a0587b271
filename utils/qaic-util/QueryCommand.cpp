#include "QueryCommand.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "DeviceStatus.hpp"
#include "QaicdAccess.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::util {
namespace {

// What qaicd says about the partitions, by id; empty without qaicd (the sys tree still has the
// rest).
using LeaseMap = std::map<unsigned, qaicd::PartitionInfo>;

LeaseMap leasesFromQaicd(const std::vector<DeviceStatus>& devices) {
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
  return "pid " + std::to_string(lease.holderPid) + (name.empty() ? "" : " (" + name + ")") +
         ", uid " + std::to_string(lease.ownerUid) + ", lease from qaicd";
}

void printQuery(const DeviceStatus& s, const LeaseMap& leases, std::ostream& out) {
  out << "QID " << s.id << "\n"
      << "\tStatus:" << s.status << "\n"
      << "\tPCI Address:" << s.pciAddress << "\n"
      << "\tPCI Info:Vendor " << s.pciVendor << " Device " << s.pciDevice << "\n"
      << "\tHW Version:" << s.hwVersion << "\n"
      << "\tFW Version:" << s.fwVersion << "\n"
      << "\tDram Total:" << s.dramTotalMb << " MB\n"
      << "\tDram Free:" << s.dramFreeMb << " MB\n"
      << "\tVc Total:" << s.vcTotal << "\n"
      << "\tVc Free:" << s.vcFree << "\n"
      << "\tNsp Total:" << s.nspTotal << "\n"
      << "\tNsp Free:" << s.nspFree << "\n"
      << "\tMCID Total:" << s.mcidTotal << "\n"
      << "\tMCID Free:" << s.mcidFree << "\n"
      << "\tSemaphore Total:" << s.semTotal << "\n"
      << "\tSemaphore Free:" << s.semFree << "\n"
      << "\tConstants Loaded:" << s.constantsLoaded << "\n"
      << "\tConstants In-Use:" << s.constantsInUse << "\n"
      << "\tNetworks Loaded:" << s.networksLoaded << "\n"
      << "\tNetworks Active:" << s.networksActive << "\n"
      << "\tNSP Frequency(Mhz):" << s.nspFrequencyMhz << "\n"
      << "\tSku Type:" << s.sku << "\n";
  for (std::size_t i = 0; i < s.dbcStates.size(); ++i) out << "\tDBC" << i << " State:" << s.dbcStates[i] << "\n";
  if (s.partition) {
    out << "\tParent QID:" << s.partition->parent << "\n"
        << "\tOwner UID:" << s.partition->ownerUid << "\n"
        << "\tOwner GID:" << s.partition->ownerGid << "\n"
        << "\tMode:" << s.partition->mode << "\n"
        << "\tHolder PID:" << s.partition->holderPid << "\n"
        << "\tLabel:" << s.partition->label << "\n";
    if (auto lease = leases.find(s.id); lease != leases.end()) out << "\tHolder:" << holderText(lease->second) << "\n";
  }
}

nlohmann::json toJson(const DeviceStatus& s, const LeaseMap& leases) {
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
  if (s.partition) {
    j["partition"] = {{"parent", s.partition->parent},       {"owner_uid", s.partition->ownerUid},
                      {"owner_gid", s.partition->ownerGid},  {"mode", s.partition->mode},
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

void printTable(const std::vector<DeviceStatus>& devices, std::ostream& out) {
  out << std::left << std::setw(5) << "QID" << std::setw(14) << "Status" << std::setw(18) << "NSP Used / Total"
      << std::setw(20) << "NW Loaded / Active" << std::setw(22) << "DRAM Used / Total" << "Partition of" << "\n";
  for (const auto& s : devices) {
    auto pair = [](uint64_t a, uint64_t b) { return std::to_string(a) + " / " + std::to_string(b); };
    out << std::setw(5) << s.id << std::setw(14) << s.status << std::setw(18) << pair(s.nspTotal - s.nspFree, s.nspTotal)
        << std::setw(20) << pair(s.networksLoaded, s.networksActive)
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
  const auto root = driver::DeviceRoot::fromEnvironment();
  std::vector<unsigned> ids = request.devices;
  if (ids.empty()) ids = root.listDevices();
  if (ids.empty()) {
    err << "qaic-util: error: no devices under " << root.path().string()
        << "/dev/accel (is qaic-emu running? QAIC_ROOT selects the root)\n";
    return 1;
  }
  auto readAll = [&](std::vector<DeviceStatus>& devices) {
    devices.clear();
    for (unsigned id : ids) {
      try {
        devices.push_back(readDeviceStatus(root, id));
      } catch (const std::exception& e) {
        // A partition listed a moment ago may have been released since; only a device or a
        // partition asked for by -d is an error when it cannot be read. One that is still there
        // but not this user's to open is named, not shown.
        const bool listedPartition = request.devices.empty() && id >= driver::kFirstPartitionId;
        if (!listedPartition) throw;
        std::error_code ec;
        if (std::filesystem::exists(root.nodePath(id), ec))
          err << "qaic-util: note: " << e.what() << " (not shown)\n";
      }
    }
  };

  try {
    std::vector<DeviceStatus> devices;
    if (!request.refreshSeconds) {
      readAll(devices);
      const LeaseMap leases = leasesFromQaicd(devices);
      if (request.json) {
        // Partitions apart, so that "devices" keeps counting whole devices.
        nlohmann::json list = nlohmann::json::array(), partitions = nlohmann::json::array();
        for (const auto& s : devices) (s.partition ? partitions : list).push_back(toJson(s, leases));
        out << nlohmann::json{{"devices", list}, {"partitions", partitions}}.dump(2) << "\n";
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
