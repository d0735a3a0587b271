// SPDX-License-Identifier: Apache-2.0
#include "ProcessUsage.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace qaic::testing {

ProcessUsage sampleUsage(pid_t pid) {
  ProcessUsage usage;
  const std::filesystem::path proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  long fds = 0;
  for (std::filesystem::directory_iterator it(proc / "fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
  if (!ec) usage.fds = fds;
  std::ifstream status(proc / "status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) usage.rssKb = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) usage.peakRssKb = std::stol(line.substr(6));
  }
  // Fields 14 and 15 (utime, stime, in clock ticks) count from the ')' closing the command name,
  // which may itself hold spaces and parentheses.
  std::ifstream statFile(proc / "stat");
  std::string stat((std::istreambuf_iterator<char>(statFile)), std::istreambuf_iterator<char>());
  if (const auto close = stat.rfind(')'); close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    int skipped = 0;  // fields 3 (state) to 13
    while (skipped < 11 && fields >> field) ++skipped;
    unsigned long long utime = 0, stime = 0;
    if (skipped == 11 && fields >> utime >> stime)
      usage.cpuSeconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return usage;
}

ProcessUsage sampleSettledUsage(pid_t pid, int readings, std::chrono::milliseconds apart) {
  ProcessUsage usage = sampleUsage(pid);
  for (int i = 1; i < readings; ++i) {
    std::this_thread::sleep_for(apart);
    const long fds = sampleUsage(pid).fds;
    if (fds >= 0 && (usage.fds < 0 || fds < usage.fds)) usage.fds = fds;
  }
  return usage;
}

}  // namespace qaic::testing
