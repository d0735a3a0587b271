// SPDX-License-Identifier: Apache-2.0
#include "HeldCommand.hpp"

#include <poll.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace qaic::util {
namespace {

int readSignal(int fd) {
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = ::read(fd, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

int shellStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

HeldCommand::HeldCommand() {
  sigemptyset(&blocked_);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&blocked_, s);
  ::sigprocmask(SIG_BLOCK, &blocked_, &previous_);
  signals_.reset(::signalfd(-1, &blocked_, SFD_CLOEXEC));
  if (!signals_) {
    ::sigprocmask(SIG_SETMASK, &previous_, nullptr);
    throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
  }
}

HeldCommand::~HeldCommand() { ::sigprocmask(SIG_SETMASK, &previous_, nullptr); }

int HeldCommand::waitForSignal() {
  for (;;) {
    // No timeout: holding until told to stop is the point; the signal is the cancellation.
    pollfd p{signals_.get(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return 0;
    if (p.revents & POLLIN) return readSignal(signals_.get());
  }
}

int HeldCommand::run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment,
                     std::string& error) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (environment.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : environment) env.push_back(name + "=" + value);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &blocked_);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = -1;
  const int rc = ::posix_spawnp(&child, args[0], nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = argv[0] + ": " + std::strerror(rc);
    return 127;
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  if (!pidfd) {
    // Cannot watch it together with the signals; wait for it alone (signals stay pending).
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return shellStatus(status);
  }
  for (;;) {
    // No timeout: the command runs as long as it likes; SIGINT/SIGTERM reach it from here.
    pollfd fds[2] = {{pidfd.get(), POLLIN, 0}, {signals_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      if (const int s = readSignal(signals_.get()); s != 0) ::kill(child, s);
    }
    if (fds[0].revents & POLLIN) break;
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return shellStatus(status);
}

}  // namespace qaic::util
