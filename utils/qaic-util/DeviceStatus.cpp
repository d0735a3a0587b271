#include "DeviceStatus.hpp"

#include <stdexcept>

#include "driver/DeviceNode.hpp"
#include "driver/ManageCalls.hpp"
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
  const std::string where = "device " + std::to_string(id) + ": ";
  auto text = [&](const std::string& name) {
    auto value = sysfs.read(name);
    if (!value) throw std::runtime_error(where + value.message());
    return value.value();
  };
  auto number = [&](const std::string& name) {
    auto value = sysfs.readU64(name);
    if (!value) throw std::runtime_error(where + value.message());
    return value.value();
  };
  // The figures come from the firmware, as the vendor's tools ask for them: the STATUS query
  // over MANAGE on the node (a partition's node reports the partition), the PCI address from
  // GET_UNIQUE. Only the PCI identity and the DBC states are sysfs attributes on a card.
  auto node = driver::DeviceNode::open(root, id);
  if (!node) throw std::runtime_error(where + node.message());
  auto report = driver::queryDeviceStatus(*node);
  if (!report) throw std::runtime_error(where + report.message());
  auto pciAddress = node->busId();
  if (!pciAddress) throw std::runtime_error(where + pciAddress.message());
  constexpr uint64_t kMiB = 1024 * 1024;
  DeviceStatus s;
  s.id = id;
  s.status = driver::firmwareStateName(report->firmwareState);
  s.pciAddress = *pciAddress;
  s.hwVersion = report->hwVersion;
  s.fwVersion = report->fwVersion;
  s.sku = report->sku;
  s.pciVendor = text("device/vendor");
  s.pciDevice = text("device/device");
  s.dramTotalMb = report->ddrTotalBytes / kMiB;
  s.dramFreeMb = report->ddrFreeBytes / kMiB;
  s.vcTotal = report->vcTotal;
  s.vcFree = report->vcFree;
  s.nspTotal = report->nspTotal;
  s.nspFree = report->nspFree;
  s.mcidTotal = report->mcidTotal;
  s.mcidFree = report->mcidFree;
  s.semTotal = report->semTotal;
  s.semFree = report->semFree;
  s.constantsLoaded = report->constantsLoaded;
  s.constantsInUse = report->constantsInUse;
  s.networksLoaded = report->networksLoaded;
  s.networksActive = report->networksActive;
  s.nspFrequencyMhz = report->nspFrequencyMhz;
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
