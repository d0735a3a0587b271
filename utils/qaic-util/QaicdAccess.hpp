// SPDX-License-Identifier: Apache-2.0
// How qaic-util reaches qaicd: the socket ($QAICD_SOCKET or /run/qaic/qaicd.sock) and the one
// wording for "no daemon there", shared by every command that talks to it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "qaicd/QaicdClient.hpp"

namespace qaic::util {

struct QaicdConnection {
  std::optional<qaicd::QaicdClient> client;  // empty when qaicd could not be reached
  std::string socket;
  std::string error;  // why not: "qaicd is not running (socket PATH)" or the connect error
};

QaicdConnection connectQaicd(std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The holder's command name from /proc/<pid>/comm, or "" when it cannot be read.
std::string processName(int64_t pid);

}  // namespace qaic::util
