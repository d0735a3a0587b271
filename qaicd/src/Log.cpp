// SPDX-License-Identifier: Apache-2.0
#include "Log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

namespace qaic::qaicd {

namespace {

std::atomic<bool> gVerbose{false};
std::atomic<int> gFd{STDERR_FILENO};

void emit(const char* level, const std::string& message) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  // One write per line so lines of concurrent processes sharing a log file do not interleave.
  char prefix[64];
  const int n = std::snprintf(prefix, sizeof prefix, "qaicd[%d] %lld.%03lld %s: ", static_cast<int>(::getpid()),
                              static_cast<long long>(now.count() / 1000), static_cast<long long>(now.count() % 1000),
                              level);
  std::string line(prefix, n > 0 ? static_cast<std::size_t>(n) : 0);
  line += message;
  line += '\n';
  [[maybe_unused]] ssize_t ignored = ::write(gFd.load(), line.data(), line.size());
}

}  // namespace

void setVerbose(bool verbose) { gVerbose = verbose; }
void setLogFd(int fd) { gFd = fd; }
bool verbose() { return gVerbose; }
void logInfo(const std::string& message) {
  if (gVerbose) emit("info", message);
}
void logWarn(const std::string& message) { emit("warning", message); }

}  // namespace qaic::qaicd
