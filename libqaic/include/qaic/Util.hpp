// SPDX-License-Identifier: Apache-2.0
// Device discovery and status (seed 001's Util): which devices exist under $QAIC_ROOT and what
// `qaic-util -q` reports about each, read from the device's sysfs class directory. The same
// attributes exist for a real qaic device and for qaic-emu's tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <qaic/Context.hpp>

namespace qaic::rt {

// Present when the device is a partition (a derived device, id >= 100): its device/partition/
// attributes.
struct QDevPartitionInfo {
  QID parent = 0;  // the device it was carved from
  uint64_t ownerUid = 0, ownerGid = 0;
  std::string mode;       // "0600"
  int64_t holderPid = 0;  // the lease holder; 0 for a static partition
  std::string label;
};

struct QDevInfo {
  QID id = 0;
  std::string status;  // "Initializing", "Ready", "Error"
  std::string pciAddress, hwVersion, fwVersion, sku;
  uint64_t dramTotalMb = 0, dramFreeMb = 0;
  uint64_t vcTotal = 0, vcFree = 0, nspTotal = 0, nspFree = 0;
  uint64_t mcidTotal = 0, mcidFree = 0, semTotal = 0, semFree = 0;
  uint64_t constantsLoaded = 0, constantsInUse = 0, networksLoaded = 0, networksActive = 0;
  uint64_t nspFrequencyMhz = 0;
  std::string pciVendor, pciDevice;
  // Identity and telemetry; empty where the kernel or emulator has no such attribute.
  std::string hwSerial, boardSerial, fwQcImageVersion, fwOemImageVersion, fwImageVariant;
  std::string nspVersion, nspQcImageVersion, nspImageVariant, deviceCapabilities, ddrFrequencyMhz;
  std::string maxLinkSpeed, maxLinkWidth, currentLinkSpeed, currentLinkWidth;
  std::optional<double> socTemperatureC, boardPowerW, tdpCapW;  // hwmon, when present
  std::vector<std::string> dbcStates;                           // dbc<i>_state, in order
  std::optional<QDevPartitionInfo> partition;
};

class Util {
 public:
  // Every accel<N> node under $QAIC_ROOT/dev/accel (unset: /dev/accel), ascending, partitions
  // (100 and up) included. Empty when there is none.
  static std::vector<QID> getDeviceIds();
  // Reads every attribute of `device` (a partition's counters are its own). Throws
  // Error(QS_NODEV) when the device does not exist, Error(QS_ERROR) naming the attribute that
  // cannot be read (the device may have gone away between listing and reading).
  static QDevInfo getDeviceInfo(QID device);
};

}  // namespace qaic::rt
