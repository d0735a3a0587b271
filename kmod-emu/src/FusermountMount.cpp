// SPDX-License-Identifier: Apache-2.0
#include "FusermountMount.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>
#include <vector>

#include "base/UniqueFd.hpp"

namespace qaic::emu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kFuseDevice = "/dev/fuse";

int millisecondsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// One run of fusermount3: its pid, a pidfd to wait on with a timeout, and its stderr.
struct Helper {
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd stderrRead;
};

// Everything the child needs is built before fork(): between fork and exec a multi-threaded
// parent's child may only make async-signal-safe calls.
Result<Helper> spawnFusermount(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argStrings{program};
  argStrings.insert(argStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argStrings) argv.push_back(a.data());
  argv.push_back(nullptr);

  int errPipe[2];
  if (pipe2(errPipe, O_CLOEXEC) != 0) return lastError("fusermount3: pipe2");
  UniqueFd errRead(errPipe[0]), errWrite(errPipe[1]);

  const pid_t pid = fork();
  if (pid < 0) return lastError("fusermount3: fork");
  if (pid == 0) {
    dup2(errWrite.get(), STDERR_FILENO);
    execv(argv[0], argv.data());
    static const char kExecFailed[] = "exec failed\n";
    [[maybe_unused]] ssize_t w = write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
    _exit(127);
  }
  Helper h;
  h.pid = pid;
  h.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  h.stderrRead = std::move(errRead);
  return h;
}

// Waits for the helper to exit by `deadline` (then kills it); its exit status, or nullopt when
// it had to be killed. Always reaps it.
std::optional<int> waitForExit(const Helper& h, Clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(h.pid, &status, WNOHANG);
    if (r == h.pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) return std::nullopt;  // not our child any more: nothing to reap
    const int left = millisecondsLeft(deadline);
    if (left == 0) break;
    // The pidfd turns readable at exit; without one (old kernel) we look again every 10 ms.
    pollfd p{h.pidfd.get(), POLLIN, 0};
    if (h.pidfd)
      poll(&p, 1, left);
    else
      poll(nullptr, 0, std::min(left, 10));
  }
  kill(h.pid, SIGKILL);
  while (waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return std::nullopt;
}

// What the helper wrote to stderr (it has exited, so the pipe ends), on one line.
std::string helperMessage(const Helper& h) {
  std::string text;
  char buf[512];
  for (;;) {
    pollfd p{h.stderrRead.get(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    const ssize_t n = read(h.stderrRead.get(), buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > 4096) break;
  }
  for (char& c : text)
    if (c == '\n') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text.empty() ? "no message" : text;
}

std::string describeExit(std::optional<int> status) {
  return status ? "exit status " + std::to_string(*status) : "killed after the timeout";
}

}  // namespace

std::string fuseDeviceProblem() {
  const int fd = open(kFuseDevice, O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return {};
  }
  const int error = errno;
  std::ostringstream why;
  why << kFuseDevice << ": " << std::strerror(error) << " for uid " << geteuid();
  struct stat st;
  if (stat(kFuseDevice, &st) == 0)
    why << " (mode " << std::oct << std::setw(4) << std::setfill('0') << (st.st_mode & 07777) << std::dec << ", owner "
        << st.st_uid << ":" << st.st_gid << ")";
  if (error == EACCES || error == EPERM)
    why << ". FUSE needs read-write access to " << kFuseDevice
        << " (fusermount3 opens it with the caller's rights, not root's): an administrator can "
           "grant it (mode 0666 is systemd-udev's default), or run qaic-emu as root";
  else if (error == ENOENT || error == ENODEV)
    why << ". The fuse kernel module is missing (modprobe fuse)";
  return why.str();
}

std::string fusermountProgram() {
  std::vector<std::string> candidates;
  if (const char* path = getenv("PATH")) {
    std::istringstream in(path);
    std::string dir;
    while (std::getline(in, dir, ':'))
      if (!dir.empty() && dir.front() == '/') candidates.push_back(dir + "/fusermount3");
  }
  candidates.insert(candidates.end(), {"/usr/bin/fusermount3", "/bin/fusermount3"});
  for (const auto& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return {};
}

Result<void> unmountThroughFusermount(const std::string& dir, bool lazy, std::chrono::milliseconds timeout) {
  const std::string what = "unmounting " + dir + " through fusermount3";
  const std::string program = fusermountProgram();
  if (program.empty()) return SysError{ENOENT, what + ": fusermount3 not found (package fuse3)"};
  std::vector<std::string> args{"-u"};
  if (lazy) args.push_back("-z");
  args.insert(args.end(), {"--", dir});
  auto helper = spawnFusermount(program, args);
  if (!helper) return helper.sysError();
  const std::optional<int> status = waitForExit(*helper, Clock::now() + timeout);
  if (status == 0) return {};
  return SysError{status ? EPERM : ETIMEDOUT,
                  what + " failed (" + describeExit(status) + "): " + helperMessage(*helper)};
}

}  // namespace qaic::emu
