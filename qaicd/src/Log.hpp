// SPDX-License-Identifier: Apache-2.0
// qaicd's diagnostics on stderr: warnings always, events (connections, leases, devices) with -v.
#pragma once

#include <string>

namespace qaic::qaicd {

void setVerbose(bool verbose);
// Where lines are written: stderr unless set (the kubelet fuzz target silences them).
void setLogFd(int fd);
bool verbose();
void logInfo(const std::string& message);  // only with -v
void logWarn(const std::string& message);  // always

}  // namespace qaic::qaicd
