// SPDX-License-Identifier: Apache-2.0
#include "QaicdAccess.hpp"

#include <cerrno>
#include <fstream>

namespace qaic::util {

QaicdConnection connectQaicd(std::chrono::milliseconds timeout) {
  QaicdConnection c;
  c.socket = qaicd::defaultQaicdSocket();
  auto client = qaicd::QaicdClient::connect(c.socket, timeout);
  if (client) {
    c.client.emplace(std::move(*client));
  } else if (client.error() == ENOENT || client.error() == ECONNREFUSED) {
    c.error = "qaicd is not running (socket " + c.socket + ")";
  } else {
    c.error = "cannot reach qaicd (socket " + c.socket + "): " + client.message();
  }
  return c;
}

std::string processName(int64_t pid) {
  if (pid <= 0) return {};
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace qaic::util
