// SPDX-License-Identifier: Apache-2.0
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>

#include "base/UniqueFd.hpp"

namespace qaic::driver {

SysfsDevice::SysfsDevice(const DeviceRoot& root, unsigned index) : dir_(root.sysfsPath(index)) {}

Result<std::string> SysfsDevice::read(const std::string& name) const {
  const std::string path = (dir_ / name).string();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError{errno, "open " + path};
  std::string text(kMaxAttributeBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError{errno, "read " + path};
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > kMaxAttributeBytes) return SysError{EFBIG, "read " + path};
  text.resize(used);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool parseAttributeU64(const std::string& text, uint64_t& value) {
  std::string_view digits = text;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  if (digits.empty()) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  return ec == std::errc() && end == digits.data() + digits.size();
}

std::optional<std::vector<uint32_t>> parseP2pPeers(std::string_view text) {
  std::vector<uint32_t> peers;
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    uint32_t peer = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), peer);
    if (ec != std::errc() || (end != text.data() + text.size() && *end != ' ')) return std::nullopt;
    peers.push_back(peer);
    at = static_cast<std::size_t>(end - text.data());
  }
  return peers;
}

std::optional<std::vector<uint32_t>> readP2pPeers(const SysfsDevice& device) {
  auto text = device.read(sysfs::kEmuP2pPeers);
  if (!text) return std::nullopt;
  return parseP2pPeers(*text);
}

Result<uint64_t> SysfsDevice::readU64(const std::string& name) const {
  auto text = read(name);
  if (!text) return text.sysError();
  uint64_t value = 0;
  if (!parseAttributeU64(*text, value)) return SysError{EINVAL, "parse " + (dir_ / name).string()};
  return value;
}

Result<void> SysfsDevice::write(const std::string& name, const std::string& value) const {
  const std::string path = (dir_ / name).string();
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return SysError{errno, "open " + path};
  ssize_t n;
  do {
    n = ::write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SysError{errno, "write " + path};
  if (static_cast<std::size_t>(n) != value.size()) return SysError{EIO, "short write " + path};
  return {};
}

}  // namespace qaic::driver
