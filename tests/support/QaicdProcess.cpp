// SPDX-License-Identifier: Apache-2.0
#include "QaicdProcess.hpp"

#include <signal.h>

#include <chrono>
#include <stdexcept>
#include <utility>

#include "Paths.hpp"
#include "Process.hpp"
#include "TempDir.hpp"

namespace qaic::testing {

using namespace std::chrono_literals;

std::filesystem::path QaicdProcess::binary() { return programPath("qaicd"); }

QaicdProcess::QaicdProcess(const std::filesystem::path& root, const std::filesystem::path& socket,
                           const std::filesystem::path& logFile, const std::vector<std::string>& extraArgs)
    : log_(logFile) {
  std::vector<std::string> argv = {binary().string(), "--root", root.string(), "--socket", socket.string(),
                                   "--daemon",        "-v",     "--poll-ms",   "50"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  const RunResult launcher = runCapturing(argv, 60s, logFile);  // it prints the daemon's pid
  if (launcher.exitCode != 0)
    throw std::runtime_error("qaicd --daemon exited " + std::to_string(launcher.exitCode) + "\n" + log());
  pid_ = static_cast<pid_t>(std::stol(launcher.out));
}

QaicdProcess::~QaicdProcess() { stop(); }

bool QaicdProcess::stop() {
  if (pid_ <= 0) return true;
  const pid_t pid = std::exchange(pid_, -1);
  ::kill(pid, SIGTERM);
  if (waitForExit(pid, 10s)) return true;
  ::kill(pid, SIGKILL);
  waitForExit(pid, 10s);
  return false;
}

std::string QaicdProcess::log() const { return readFile(log_); }

}  // namespace qaic::testing
