#include "ProcessUsage.hpp"

#include <filesystem>
#include <fstream>
#include <string>

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
  return usage;
}

}  // namespace qaic::testing
