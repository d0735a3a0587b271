// What qaic-util reports about one device, read from its sysfs class directory. The same
// attributes exist for a real qaic device and for qaic-emu's tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/DeviceRoot.hpp"

namespace qaic::util {

// Present when the device is a partition (a derived device, id >= 100): its
// device/partition/ files.
struct PartitionOrigin {
  unsigned parent = 0;
  uint64_t ownerUid = 0, ownerGid = 0;
  std::string mode;       // "0600"
  int64_t holderPid = 0;  // 0: a static partition
  std::string label;
};

struct DeviceStatus {
  unsigned id = 0;
  std::string status;        // Initializing, Ready, Error
  std::string pciAddress, hwVersion, fwVersion, sku;
  uint64_t dramTotalMb = 0, dramFreeMb = 0;
  uint64_t vcTotal = 0, vcFree = 0, nspTotal = 0, nspFree = 0;
  uint64_t mcidTotal = 0, mcidFree = 0, semTotal = 0, semFree = 0;
  uint64_t constantsLoaded = 0, constantsInUse = 0, networksLoaded = 0, networksActive = 0;
  uint64_t nspFrequencyMhz = 0;
  std::string pciVendor, pciDevice;
  // Identity and telemetry; empty (not shown) where the kernel or emulator has no such attribute.
  std::string hwSerial, boardSerial, fwQcImageVersion, fwOemImageVersion, fwImageVariant;
  std::string nspVersion, nspQcImageVersion, nspImageVariant, deviceCapabilities, ddrFrequencyMhz;
  std::string maxLinkSpeed, maxLinkWidth, currentLinkSpeed, currentLinkWidth;
  std::optional<double> socTemperatureC, boardPowerW, tdpCapW;  // hwmon: temp1_input, power1_input, power1_cap
  std::vector<std::string> dbcStates;  // dbc<i>_state, in order
  std::optional<PartitionOrigin> partition;
};

// Reads every attribute (a partition's counters are its own: its totals and what is free of
// them). An unreadable attribute is an error naming it (the device may have
// gone away between listing and reading).
DeviceStatus readDeviceStatus(const driver::DeviceRoot& root, unsigned id);

}  // namespace qaic::util
