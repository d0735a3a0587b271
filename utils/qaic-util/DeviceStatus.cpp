#include "DeviceStatus.hpp"

#include <stdexcept>

#include "driver/SysfsDevice.hpp"

namespace qaic::util {
namespace {

// dbc<i>_state holds mainline's number (0-5); the query shows its name, as it always has.
std::string dbcStateName(const std::string& number) {
  static const char* const names[] = {"idle",           "assigned",        "before shutdown",
                                      "after shutdown", "before power up", "after power up"};
  if (number.size() == 1 && number[0] >= '0' && number[0] <= '5') return names[number[0] - '0'];
  return number;
}

}  // namespace

DeviceStatus readDeviceStatus(const driver::DeviceRoot& root, unsigned id) {
  const driver::SysfsDevice sysfs(root, id);
  auto text = [&](const std::string& name) {
    auto value = sysfs.read(name);
    if (!value) throw std::runtime_error("device " + std::to_string(id) + ": " + value.message());
    return value.value();
  };
  auto number = [&](const std::string& name) {
    auto value = sysfs.readU64(name);
    if (!value) throw std::runtime_error("device " + std::to_string(id) + ": " + value.message());
    return value.value();
  };
  DeviceStatus s;
  s.id = id;
  s.status = text("qaic-emu/status");
  s.pciAddress = text("qaic-emu/pci_address");
  s.hwVersion = text("qaic-emu/hw_version");
  s.fwVersion = text("qaic-emu/fw_version");
  s.sku = text("qaic-emu/sku");
  s.pciVendor = text("device/vendor");
  s.pciDevice = text("device/device");
  s.dramTotalMb = number("qaic-emu/dram_total");
  s.dramFreeMb = number("qaic-emu/dram_free");
  s.vcTotal = number("qaic-emu/vc_total");
  s.vcFree = number("qaic-emu/vc_free");
  s.nspTotal = number("qaic-emu/nsp_total");
  s.nspFree = number("qaic-emu/nsp_free");
  s.mcidTotal = number("qaic-emu/mcid_total");
  s.mcidFree = number("qaic-emu/mcid_free");
  s.semTotal = number("qaic-emu/sem_total");
  s.semFree = number("qaic-emu/sem_free");
  s.constantsLoaded = number("qaic-emu/constants_loaded");
  s.constantsInUse = number("qaic-emu/constants_in_use");
  s.networksLoaded = number("qaic-emu/networks_loaded");
  s.networksActive = number("qaic-emu/networks_active");
  s.nspFrequencyMhz = number("qaic-emu/nsp_frequency_mhz");
  if (sysfs.read("qaic-emu/partition/parent")) {
    PartitionOrigin p;
    p.parent = static_cast<unsigned>(number("qaic-emu/partition/parent"));
    p.ownerUid = number("qaic-emu/partition/owner_uid");
    p.ownerGid = number("qaic-emu/partition/owner_gid");
    p.mode = text("qaic-emu/partition/mode");
    p.holderPid = static_cast<int64_t>(number("qaic-emu/partition/holder_pid"));
    p.label = text("qaic-emu/partition/label");
    s.partition = std::move(p);
  }
  for (uint64_t i = 0; i < s.vcTotal; ++i) {
    auto state = sysfs.read("dbc" + std::to_string(i) + "_state");
    if (!state) break;  // older kernels have no per-DBC state
    s.dbcStates.push_back(dbcStateName(state.value()));
  }
  return s;
}

}  // namespace qaic::util
