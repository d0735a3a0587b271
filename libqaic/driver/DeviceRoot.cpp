// SPDX-License-Identifier: Apache-2.0
#include "driver/DeviceRoot.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace qaic::driver {

DeviceRoot DeviceRoot::fromEnvironment() {
  const char* root = std::getenv("QAIC_ROOT");
  return DeviceRoot(root != nullptr && *root != '\0' ? root : "/");
}

std::filesystem::path DeviceRoot::nodePath(unsigned index) const {
  return root_ / "dev" / "accel" / ("accel" + std::to_string(index));
}

std::filesystem::path DeviceRoot::sysfsPath(unsigned index) const {
  return root_ / "sys" / "class" / "accel" / ("accel" + std::to_string(index));
}

bool parseAccelName(const std::string& name, unsigned& index) {
  constexpr std::string_view prefix = "accel";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  if (*first < '0' || *first > '9') return false;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last) return false;
  index = value;
  return true;
}

std::vector<unsigned> DeviceRoot::listDevices() const {
  std::vector<unsigned> indices;
  std::error_code ec;
  std::filesystem::directory_iterator it(root_ / "dev" / "accel", ec);
  if (ec) return indices;
  // The emulator can unmount while we list: an iteration error ends the list, never throws.
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    unsigned index = 0;
    if (parseAccelName(it->path().filename().string(), index)) indices.push_back(index);
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

std::string DeviceRoot::lostServer() const {
  struct stat st {};
  const auto dev = root_ / "dev";
  if (::stat(dev.c_str(), &st) == 0 || errno != ENOTCONN) return {};
  return "the devices under " + root_.string() + " are gone: the file system serving them is not connected (" +
         dev.string() + ": " + std::strerror(ENOTCONN) + "; was qaic-emu killed?)";
}

}  // namespace qaic::driver
