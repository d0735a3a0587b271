// SPDX-License-Identifier: Apache-2.0
// The attribute files of one device's class directory ($QAIC_ROOT/sys/class/accel/accelN/),
// including the PCI-device side under device/ and the emulator's qaic-emu/ (names: SysfsNames.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.hpp"
#include "driver/DeviceRoot.hpp"

namespace qaic::driver {

class SysfsDevice {
 public:
  SysfsDevice(const DeviceRoot& root, unsigned index);
  explicit SysfsDevice(std::filesystem::path directory) : dir_(std::move(directory)) {}

  const std::filesystem::path& directory() const { return dir_; }

  // `name` is relative to the class directory ("dbc0_state", "qaic-emu/pid"; SysfsNames.hpp).
  // Values are read whole, with the trailing newline removed; sysfs attributes are small, larger
  // files are refused with EFBIG rather than read unbounded.
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

// The device's peer-to-peer peers (qaic-emu/p2p_peers: QIDs separated by spaces, maybe none);
// nullopt when the device publishes no topology (a real driver) or the text is malformed.
std::optional<std::vector<uint32_t>> readP2pPeers(const SysfsDevice& device);
std::optional<std::vector<uint32_t>> parseP2pPeers(std::string_view text);

}  // namespace qaic::driver
