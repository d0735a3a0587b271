#include "QaicdProcess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "EmulatorProcess.hpp"
#include "Subprocess.hpp"

extern char** environ;

namespace qaic::qaicd::test {

using namespace std::chrono_literals;

LaunchResult launch(const std::vector<std::string>& argv, const std::string& logFile) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  LaunchResult result;
  char buffer[256];
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) break;
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.stdoutText.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  if (!emu::test::waitForExit(pid, std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(1s)))))
    ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  return result;
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
