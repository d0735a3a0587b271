#include "Subprocess.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

extern char** environ;

namespace qaic::emu::test {

namespace {

ExitStatus reap(pid_t pid, std::chrono::milliseconds timeout) {
  ExitStatus status;
  if (!waitForExit(pid, timeout)) {
    status.timedOut = true;
    ::kill(pid, SIGKILL);
  }
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(raw)) {
    status.exited = !status.timedOut;
    status.code = WEXITSTATUS(raw);
  }
  return status;
}

}  // namespace

bool waitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool ended = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::max<long>(left.count(), 0)));
    if (rc > 0) {
      ended = true;
      break;
    }
    if (rc == 0 || (rc < 0 && errno != EINTR)) break;
  }
  ::close(fd);
  return ended;
}

namespace {

// stderr is appended to `logFile`; stdout goes to `stdoutFd`, or (-1) to the log as well.
pid_t spawn(const std::vector<std::string>& argv, const std::string& logFile, int stdoutFd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdoutFd < 0) {
    posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_adddup2(&actions, stdoutFd, 1);
    posix_spawn_file_actions_addopen(&actions, 2, logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  // A daemon must not inherit the test runner's pipes: ctest would wait for their EOF.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::to_string(rc));
  return pid;
}

}  // namespace

ExitStatus runProgram(const std::vector<std::string>& argv, const std::string& logFile,
                      std::chrono::milliseconds timeout) {
  return reap(spawn(argv, logFile, -1), timeout);
}

ProgramOutput runProgramCapturingStdout(const std::vector<std::string>& argv, const std::string& logFile,
                                        std::chrono::milliseconds timeout) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_t pid = -1;
  try {
    pid = spawn(argv, logFile, out[1]);
  } catch (...) {
    ::close(out[0]);
    ::close(out[1]);
    throw;
  }
  ::close(out[1]);
  ProgramOutput result;
  char buffer[256];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) break;
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.stdoutText.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  // Whatever is left of the timeout, but at least a second to exit after closing stdout.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  result.status = reap(pid, std::max(left, std::chrono::milliseconds(1000)));
  return result;
}

void becomeUser(const char* user) {
  const passwd* pw = ::getpwnam(user);
  if (pw == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(pw->pw_gid) != 0 ||
      ::setuid(pw->pw_uid) != 0 || ::getuid() == 0)
    ::_exit(kSetuidFailed);
}

ExitStatus runInChild(const std::function<int()>& body, std::chrono::milliseconds timeout) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  return reap(pid, timeout);
}

}  // namespace qaic::emu::test
