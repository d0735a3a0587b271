// SPDX-License-Identifier: Apache-2.0
#include <qaic/Util.hpp>

#include <filesystem>

#include "driver/DeviceNode.hpp"
#include "driver/DeviceRoot.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {
namespace {

// dbc<i>_state holds mainline's number (0-5); QDevInfo names it, as the tools always have.
std::string dbcStateName(const std::string& number) {
  static const char* const names[] = {"idle",           "assigned",        "before shutdown",
                                      "after shutdown", "before power up", "after power up"};
  if (number.size() == 1 && number[0] >= '0' && number[0] <= '5') return names[number[0] - '0'];
  return number;
}

}  // namespace

std::vector<QID> Util::getDeviceIds() {
  const auto ids = driver::DeviceRoot::fromEnvironment().listDevices();
  return {ids.begin(), ids.end()};
}

QDevInfo Util::getDeviceInfo(QID id) {
  const auto root = driver::DeviceRoot::fromEnvironment();
  std::error_code ec;
  if (!std::filesystem::exists(root.nodePath(id), ec)) {
    if (const std::string lost = root.lostServer(); !lost.empty())
      throw Error(QS_DEV_REMOVED, "device " + std::to_string(id) + ": " + lost);
    throw Error(QS_NODEV, "device " + std::to_string(id) + ": no " + root.nodePath(id).string() +
                              " (is the device or qaic-emu running, is QAIC_ROOT right?)");
  }
  const driver::SysfsDevice sysfs(root, id);
  const std::string where = "device " + std::to_string(id) + ": ";
  auto text = [&](const std::string& name) {
    auto value = sysfs.read(name);
    if (!value) throw Error(QS_ERROR, where + value.message());
    return value.value();
  };
  auto number = [&](const std::string& name) {
    auto value = sysfs.readU64(name);
    if (!value) throw Error(QS_ERROR, where + value.message());
    return value.value();
  };
  auto optional = [&](const std::string& name) {
    auto value = sysfs.read(name);
    return value ? value.value() : std::string();
  };
  // The figures come from the firmware, as the vendor's tools ask for them: the STATUS query
  // over MANAGE on the node (a partition's node reports the partition), the PCI address from
  // GET_UNIQUE. Only the PCI function's attributes and the DBC states are sysfs files on a card;
  // the firmware's identity strings are the emulator's qaic-emu/ files (empty on a card).
  auto node = driver::DeviceNode::open(root, id);
  if (!node) throw Error(statusForErrno(node.error()), where + node.message());
  auto report = driver::queryDeviceStatus(*node);
  if (!report) throw Error(statusForErrno(report.error()), where + report.message());
  auto pciAddress = node->busId();
  if (!pciAddress) throw Error(statusForErrno(pciAddress.error()), where + pciAddress.message());
  constexpr uint64_t kMiB = 1024 * 1024;
  QDevInfo s;
  s.id = id;
  s.status = driver::firmwareStateName(report->firmwareState);
  s.pciAddress = *pciAddress;
  s.hwVersion = report->hwVersion;
  s.fwVersion = report->fwVersion;
  s.sku = report->sku;
  s.pciVendor = text(driver::sysfs::kPciVendor);
  s.pciDevice = text(driver::sysfs::kPciDevice);
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
  s.hwSerial = optional(driver::sysfs::kEmuSerial);
  s.boardSerial = optional(driver::sysfs::kEmuBoardSerial);
  s.fwQcImageVersion = optional(driver::sysfs::kEmuFwQcImageVersion);
  s.fwOemImageVersion = optional(driver::sysfs::kEmuFwOemImageVersion);
  s.fwImageVariant = optional(driver::sysfs::kEmuFwImageVariant);
  s.nspVersion = optional(driver::sysfs::kEmuNspVersion);
  s.nspQcImageVersion = optional(driver::sysfs::kEmuNspQcImageVersion);
  s.nspImageVariant = optional(driver::sysfs::kEmuNspImageVariant);
  s.deviceCapabilities = optional(driver::sysfs::kEmuDeviceCapabilities);
  s.ddrFrequencyMhz = optional(driver::sysfs::kEmuDdrFrequencyMhz);
  // The PCI function's own attributes, as the kernel names them.
  s.maxLinkSpeed = optional(driver::sysfs::kMaxLinkSpeed);
  s.maxLinkWidth = optional(driver::sysfs::kMaxLinkWidth);
  s.currentLinkSpeed = optional(driver::sysfs::kCurrentLinkSpeed);
  s.currentLinkWidth = optional(driver::sysfs::kCurrentLinkWidth);
  // hwmon: millidegrees Celsius and microwatts, in whichever hwmonN the kernel numbered it.
  for (const auto& entry : std::filesystem::directory_iterator(sysfs.directory() / driver::sysfs::kHwmonDir, ec)) {
    const std::string hwmon = std::string(driver::sysfs::kHwmonDir) + "/" + entry.path().filename().string() + "/";
    auto scaled = [&](const std::string& name, double scale) -> std::optional<double> {
      auto value = sysfs.readU64(hwmon + name);
      return value ? std::optional<double>(static_cast<double>(value.value()) / scale) : std::nullopt;
    };
    s.socTemperatureC = scaled(driver::sysfs::kHwmonTemperature, 1e3);
    s.boardPowerW = scaled(driver::sysfs::kHwmonPower, 1e6);
    s.tdpCapW = scaled(driver::sysfs::kHwmonPowerCap, 1e6);
    break;
  }
  if (sysfs.read(driver::sysfs::kPartitionParent)) {
    QDevPartitionInfo p;
    p.parent = static_cast<QID>(number(driver::sysfs::kPartitionParent));
    p.ownerUid = number(driver::sysfs::kPartitionOwnerUid);
    p.ownerGid = number(driver::sysfs::kPartitionOwnerGid);
    p.mode = text(driver::sysfs::kPartitionMode);
    p.holderPid = static_cast<int64_t>(number(driver::sysfs::kPartitionHolderPid));
    p.label = text(driver::sysfs::kPartitionLabel);
    s.partition = std::move(p);
  }
  for (uint32_t i = 0; i < s.vcTotal; ++i) {
    auto state = sysfs.read(driver::sysfs::dbcState(i));
    if (!state) break;  // older kernels have no per-DBC state
    s.dbcStates.push_back(dbcStateName(state.value()));
  }
  return s;
}

}  // namespace qaic::rt
