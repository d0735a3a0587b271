// SPDX-License-Identifier: Apache-2.0
// Where devices live: $QAIC_ROOT/dev/accel/accelN and $QAIC_ROOT/sys/class/accel/accelN/, with
// QAIC_ROOT unset (or empty) meaning "/", so the same code finds real and emulated devices.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qaic::driver {

class DeviceRoot {
 public:
  explicit DeviceRoot(std::filesystem::path root) : root_(std::move(root)) {}
  static DeviceRoot fromEnvironment();  // QAIC_ROOT, or "/"

  const std::filesystem::path& path() const { return root_; }
  std::filesystem::path nodePath(unsigned index) const;   // <root>/dev/accel/accelN
  std::filesystem::path sysfsPath(unsigned index) const;  // <root>/sys/class/accel/accelN

  // Indices of the accelN nodes present under dev/accel, ascending. A missing directory means
  // no devices; entries whose names are not exactly accel<decimal> are ignored.
  std::vector<unsigned> listDevices() const;

  // Why the devices under this root are gone when the file system serving them is: its FUSE
  // connection is closed (ENOTCONN, the emulator was killed or its connection aborted), so
  // nothing under it answers. Empty while it serves, and for a root that is not such a mount.
  std::string lostServer() const;

 private:
  std::filesystem::path root_;
};

// "accel12" -> 12; anything else (accel, accel1x, accel-1, overflow) -> false.
bool parseAccelName(const std::string& name, unsigned& index);

}  // namespace qaic::driver
