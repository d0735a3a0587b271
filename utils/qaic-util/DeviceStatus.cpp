#include "DeviceStatus.hpp"

#include <filesystem>
#include <stdexcept>

#include "driver/SysfsDevice.hpp"

namespace qaic::util {

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
  s.status = text("status");
  s.pciAddress = text("pci_address");
  s.hwVersion = text("hw_version");
  s.fwVersion = text("fw_version");
  s.sku = text("sku");
  s.pciVendor = text("device/vendor");
  s.pciDevice = text("device/device");
  s.dramTotalMb = number("dram_total");
  s.dramFreeMb = number("dram_free");
  s.vcTotal = number("vc_total");
  s.vcFree = number("vc_free");
  s.nspTotal = number("nsp_total");
  s.nspFree = number("nsp_free");
  s.mcidTotal = number("mcid_total");
  s.mcidFree = number("mcid_free");
  s.semTotal = number("sem_total");
  s.semFree = number("sem_free");
  s.constantsLoaded = number("constants_loaded");
  s.constantsInUse = number("constants_in_use");
  s.networksLoaded = number("networks_loaded");
  s.networksActive = number("networks_active");
  s.nspFrequencyMhz = number("nsp_frequency_mhz");
  auto optional = [&](const std::string& name) {
    auto value = sysfs.read(name);
    return value ? value.value() : std::string();
  };
  s.hwSerial = optional("serial");
  s.boardSerial = optional("board_serial");
  s.fwQcImageVersion = optional("fw_qc_image_version");
  s.fwOemImageVersion = optional("fw_oem_image_version");
  s.fwImageVariant = optional("fw_image_variant");
  s.nspVersion = optional("nsp_version");
  s.nspQcImageVersion = optional("nsp_qc_image_version");
  s.nspImageVariant = optional("nsp_image_variant");
  s.deviceCapabilities = optional("device_capabilities");
  s.ddrFrequencyMhz = optional("ddr_frequency_mhz");
  // The PCI function's own attributes, as the kernel names them.
  s.maxLinkSpeed = optional("device/max_link_speed");
  s.maxLinkWidth = optional("device/max_link_width");
  s.currentLinkSpeed = optional("device/current_link_speed");
  s.currentLinkWidth = optional("device/current_link_width");
  // hwmon: millidegrees Celsius and microwatts, in whichever hwmonN the kernel numbered it.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(sysfs.directory() / "device" / "hwmon", ec)) {
    const std::string hwmon = "device/hwmon/" + entry.path().filename().string() + "/";
    auto scaled = [&](const std::string& name, double scale) -> std::optional<double> {
      auto value = sysfs.readU64(hwmon + name);
      return value ? std::optional<double>(static_cast<double>(value.value()) / scale) : std::nullopt;
    };
    s.socTemperatureC = scaled("temp1_input", 1e3);
    s.boardPowerW = scaled("power1_input", 1e6);
    s.tdpCapW = scaled("power1_cap", 1e6);
    break;
  }
  if (sysfs.read("device/partition/parent")) {
    PartitionOrigin p;
    p.parent = static_cast<unsigned>(number("device/partition/parent"));
    p.ownerUid = number("device/partition/owner_uid");
    p.ownerGid = number("device/partition/owner_gid");
    p.mode = text("device/partition/mode");
    p.holderPid = static_cast<int64_t>(number("device/partition/holder_pid"));
    p.label = text("device/partition/label");
    s.partition = std::move(p);
  }
  for (uint64_t i = 0; i < s.vcTotal; ++i) {
    auto state = sysfs.read("dbc" + std::to_string(i) + "_state");
    if (!state) break;  // older kernels have no per-DBC state
    s.dbcStates.push_back(state.value());
  }
  return s;
}

}  // namespace qaic::util
