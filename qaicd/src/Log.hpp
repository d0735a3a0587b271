// qaicd's diagnostics on stderr: warnings always, events (connections, leases, devices) with -v.
#pragma once

#include <string>

namespace qaic::qaicd {

void setVerbose(bool verbose);
bool verbose();
void logInfo(const std::string& message);  // only with -v
void logWarn(const std::string& message);  // always

}  // namespace qaic::qaicd
