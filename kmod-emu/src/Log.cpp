// SPDX-License-Identifier: Apache-2.0
#include "Log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace qaic::emu {
namespace {
std::atomic<bool> gVerbose{false};
std::atomic<bool> gTraceRequests{false};
std::mutex gLogMutex;

void emit(std::string_view level, std::string_view message) {
  std::lock_guard lock(gLogMutex);
  std::fprintf(stderr, "qaic-emu: %.*s%.*s\n", static_cast<int>(level.size()), level.data(),
               static_cast<int>(message.size()), message.data());
}
}  // namespace

void setVerbose(bool v) { gVerbose.store(v); }
bool verbose() { return gVerbose.load(); }
void logError(std::string_view message) { emit("error: ", message); }
void logNotice(std::string_view message) { emit("note: ", message); }
void logInfo(std::string_view message) {
  if (gVerbose.load()) emit("", message);
}
void setTraceRequests(bool trace) { gTraceRequests.store(trace); }
bool traceRequests() { return gTraceRequests.load(std::memory_order_relaxed); }
void logRequest(std::string_view message) {
  if (traceRequests()) emit("", message);
}

}  // namespace qaic::emu
