#include "QaicdProcess.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "EmulatorProcess.hpp"
#include "Subprocess.hpp"

namespace qaic::qaicd::test {

using namespace std::chrono_literals;

LaunchResult launch(const std::vector<std::string>& argv, const std::string& logFile) {
  const auto run = emu::test::runProgramCapturingStdout(argv, logFile, 60s);
  return {run.status.exited ? run.status.code : -1, run.stdoutText};
}

std::filesystem::path QaicdProcess::binary() { return emu::test::buildDir() / "bin" / "qaicd"; }

QaicdProcess::QaicdProcess(const std::filesystem::path& root, const std::filesystem::path& socket,
                           const std::filesystem::path& logFile, const std::vector<std::string>& extraArgs)
    : log_(logFile) {
  std::vector<std::string> argv = {binary().string(), "--root", root.string(), "--socket", socket.string(),
                                   "--daemon", "-v", "--poll-ms", "50"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  const LaunchResult r = launch(argv, logFile.string());
  if (r.exitCode != 0) throw std::runtime_error("qaicd --daemon exited " + std::to_string(r.exitCode) + "\n" + log());
  pid_ = static_cast<pid_t>(std::stol(r.stdoutText));
}

QaicdProcess::~QaicdProcess() { stop(); }

bool QaicdProcess::stop() {
  if (pid_ <= 0) return true;
  const pid_t pid = std::exchange(pid_, -1);
  ::kill(pid, SIGTERM);
  if (emu::test::waitForExit(pid, 10s)) return true;
  ::kill(pid, SIGKILL);
  emu::test::waitForExit(pid, 10s);
  return false;
}

std::string QaicdProcess::log() const {
  std::ifstream in(log_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace qaic::qaicd::test
