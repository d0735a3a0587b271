// SPDX-License-Identifier: Apache-2.0
// qaic-emu's diagnostics on stderr: errors always, details with -v.
#pragma once

#include <string_view>

namespace qaic::emu {

void setVerbose(bool verbose);
bool verbose();
void logError(std::string_view message);
void logInfo(std::string_view message);    // only with -v
void logNotice(std::string_view message);  // always: a start-time fact a user should know
// --trace-requests: one line per request the device ends, in the order the device ends them
// (how a test sees the order on the device side).
void setTraceRequests(bool trace);
bool traceRequests();
void logRequest(std::string_view message);  // only with --trace-requests

}  // namespace qaic::emu
