// SPDX-License-Identifier: Apache-2.0
// qaicd: partitions of qaic devices and their leases, served on a Unix socket (docs/qaicd.md).
// Exit status: 0 clean stop (SIGTERM/SIGINT), 1 start failure, 2 bad arguments or configuration.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "Config.hpp"
#include "Daemon.hpp"
#include "Log.hpp"
#include "Options.hpp"
#include "QaicVersion.hpp"

namespace {

using namespace qaic::qaicd;

// Runs the daemon; `ready` (or -1) receives "ok" once the socket accepts, or the error.
int serve(const DaemonOptions& options, int ready) {
  auto daemon = Daemon::start(options);
  if (!daemon) {
    const std::string message = "qaicd: " + daemon.message() + "\n";
    if (ready >= 0) {
      [[maybe_unused]] ssize_t n = ::write(ready, message.data(), message.size());
    }
    std::cerr << message;
    return 1;
  }
  if (ready >= 0) {
    [[maybe_unused]] ssize_t n = ::write(ready, "ok", 2);
    ::close(ready);
    if (!verbose()) {
      const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null >= 0) {
        ::dup2(null, STDERR_FILENO);
        ::close(null);
      }
    }
  }
  // Type=notify units (qaicd.service) start their dependents only now; without systemd
  // (no NOTIFY_SOCKET) these are no-ops.
  ::sd_notify(0, "READY=1");
  (*daemon)->run();
  ::sd_notify(0, "STOPPING=1");
  return 0;
}

// Forks; the parent prints the child's pid and exits 0 only once the child's socket accepts.
int daemonize(const DaemonOptions& options) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
    std::perror("qaicd: pipe");
    return 1;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("qaicd: fork");
    return 1;
  }
  if (child == 0) {
    ::close(pipeFds[0]);
    ::setsid();
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
      ::close(null);
    }
    ::_exit(serve(options, pipeFds[1]));
  }
  ::close(pipeFds[1]);
  std::string reply;
  char buffer[512];
  // Starting scans every device once; a minute is far more than that takes.
  pollfd p{pipeFds[0], POLLIN, 0};
  while (::poll(&p, 1, 60'000) == 1) {
    const ssize_t n = ::read(pipeFds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipeFds[0]);
  if (reply != "ok") {
    if (reply.empty()) std::cerr << "qaicd: the daemon did not start\n";
    ::kill(child, SIGTERM);
    return 1;
  }
  std::cout << child << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine line;
  try {
    line = parseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "qaicd: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (line.help) {
    std::cout << kUsage;
    return 0;
  }
  if (line.version) {
    qaic::printVersion("qaicd");
    return 0;
  }
  setVerbose(line.verbose);
  DaemonOptions options;
  options.root = line.root;
  options.socket = line.socket;
  if (!line.config.empty()) {
    try {
      options.config = loadConfig(line.config);
    } catch (const ConfigError& e) {
      std::cerr << "qaicd: " << e.what() << "\n";
      return 2;
    }
  }
  options.pollMs = line.pollMs.value_or(options.config.pollMs.value_or(250));
  options.deviceTimeout = std::chrono::milliseconds(
      line.deviceTimeoutMs.value_or(options.config.deviceTimeoutMs.value_or(kDefaultDeviceTimeoutMs)));
  options.kubeletDir = kubeletDirectory(line);
  options.kubeletMountsOnly = line.kubeletMountsOnly;

  // Blocked before any fork so the daemon's signalfd receives them; a client that disappears
  // mid-answer must not kill the daemon.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return line.daemon ? daemonize(options) : serve(options, -1);
}
