#include "QueryCommand.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "DeviceStatus.hpp"

namespace qaic::util {
namespace {

void printQuery(const DeviceStatus& s, std::ostream& out) {
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
}

nlohmann::json toJson(const DeviceStatus& s) {
  return {{"qid", s.id},
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
}

void printTable(const std::vector<DeviceStatus>& devices, std::ostream& out) {
  out << std::left << std::setw(5) << "QID" << std::setw(14) << "Status" << std::setw(18) << "NSP Used / Total"
      << std::setw(20) << "NW Loaded / Active" << std::setw(22) << "DRAM Used / Total" << "\n";
  for (const auto& s : devices) {
    auto pair = [](uint64_t a, uint64_t b) { return std::to_string(a) + " / " + std::to_string(b); };
    out << std::setw(5) << s.id << std::setw(14) << s.status << std::setw(18) << pair(s.nspTotal - s.nspFree, s.nspTotal)
        << std::setw(20) << pair(s.networksLoaded, s.networksActive)
        << std::setw(22) << (pair(s.dramTotalMb - s.dramFreeMb, s.dramTotalMb) + " MB") << "\n";
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
    for (unsigned id : ids) devices.push_back(readDeviceStatus(root, id));
  };

  try {
    std::vector<DeviceStatus> devices;
    if (!request.refreshSeconds) {
      readAll(devices);
      if (request.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& s : devices) list.push_back(toJson(s));
        out << nlohmann::json{{"devices", list}}.dump(2) << "\n";
      } else {
        for (const auto& s : devices) printQuery(s, out);
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
