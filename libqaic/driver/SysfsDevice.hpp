// The attribute files of one device's class directory ($QAIC_ROOT/sys/class/accel/accelN/),
// including the PCI-device side under device/ (emu_pid, emu_shm_dir, fault/...).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "driver/DeviceRoot.hpp"
#include "base/Result.hpp"

namespace qaic::driver {

class SysfsDevice {
 public:
  SysfsDevice(const DeviceRoot& root, unsigned index);
  explicit SysfsDevice(std::filesystem::path directory) : dir_(std::move(directory)) {}

  const std::filesystem::path& directory() const { return dir_; }

  // `name` is relative to the class directory ("nsp_free", "device/emu_pid"). Values are read
  // whole, with the trailing newline removed; sysfs attributes are small, larger files are
  // refused with EFBIG rather than read unbounded.
  Result<std::string> read(const std::string& name) const;
  // A single unsigned decimal (or 0x-prefixed hex) number; anything else is EINVAL.
  Result<uint64_t> readU64(const std::string& name) const;
  // Writes `value` in one write() call, as a sysfs store expects.
  Result<void> write(const std::string& name, const std::string& value) const;

  static constexpr std::size_t kMaxAttributeBytes = 4096;

 private:
  std::filesystem::path dir_;
};

// Parses an attribute's text as SysfsDevice::readU64 does.
bool parseAttributeU64(const std::string& text, uint64_t& value);

}  // namespace qaic::driver
