// SPDX-License-Identifier: Apache-2.0
#include "Process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "Paths.hpp"

extern char** environ;

namespace qaic::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds until(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The descriptors a child starts with, opened before fork (the child then only calls
// async-signal-safe functions: dup2, close_range, execve, _exit).
struct ChildSetup {
  int stdinFd = -1, stdoutFd = -1, stderrFd = -1;        // the child's ends; -1: inherited
  int stdinPipe = -1, stdoutPipe = -1, stderrPipe = -1;  // the parent's ends
  bool stderrToStdout = false;
  bool closeInherited = true;

  explicit ChildSetup(const ProcessOptions& options)
      : stderrToStdout(options.stderrToStdout), closeInherited(!options.keepInheritedDescriptors) {
    try {
      if (options.pipeStdin) {
        openPipe(stdinFd, stdinPipe, true);
      } else {
        stdinFd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      }
      if (options.captureStdout)
        openPipe(stdoutFd, stdoutPipe, false);
      else if (!options.stdoutFile.empty())
        stdoutFd = openLog(options.stdoutFile);
      if (!options.stderrToStdout) {
        if (options.captureStderr)
          openPipe(stderrFd, stderrPipe, false);
        else if (!options.stderrFile.empty())
          stderrFd = openLog(options.stderrFile);
      }
    } catch (...) {
      closeAll();
      throw;
    }
  }
  ~ChildSetup() { closeChildEnds(); }

  static void openPipe(int& childEnd, int& parentEnd, bool childReads) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    childEnd = childReads ? fds[0] : fds[1];
    parentEnd = childReads ? fds[1] : fds[0];
  }
  static int openLog(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("open " + path.string() + ": " + std::strerror(errno));
    return fd;
  }
  void closeChildEnds() {
    closeFd(stdinFd);
    closeFd(stdoutFd);
    closeFd(stderrFd);
  }
  void closeAll() {
    closeChildEnds();
    closeFd(stdinPipe);
    closeFd(stdoutPipe);
    closeFd(stderrPipe);
  }
  // In the child.
  void install() const {
    if (stdinFd >= 0) ::dup2(stdinFd, 0);
    if (stdoutFd >= 0) ::dup2(stdoutFd, 1);
    if (stderrToStdout)
      ::dup2(1, 2);
    else if (stderrFd >= 0)
      ::dup2(stderrFd, 2);
    if (closeInherited) ::close_range(3, ~0U, 0);
  }
};

std::vector<std::string> environmentWith(const std::vector<std::string>& overrides) {
  std::vector<std::string> entries(overrides);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto replaced = std::find_if(overrides.begin(), overrides.end(), [&](const std::string& o) {
      const auto equals = o.find('=');
      return text.substr(0, equals + 1) == std::string_view(o).substr(0, equals + 1);
    });
    if (replaced == overrides.end()) entries.emplace_back(text);
  }
  return entries;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int openPidFd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

Process::Process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::invalid_argument("Process: no program");
  std::vector<std::string> args(argv);
  std::vector<std::string> env = environmentWith(options.environment);
  std::vector<char*> argp = pointers(args);
  std::vector<char*> envp = pointers(env);
  ChildSetup setup(options);
  pid_ = ::fork();
  if (pid_ < 0) {
    setup.closeAll();
    throw std::runtime_error("fork for " + argv[0] + ": " + std::strerror(errno));
  }
  if (pid_ == 0) {
    setup.install();
    ::execve(argp[0], argp.data(), envp.data());
    ::_exit(127);
  }
  pidFd_ = openPidFd(pid_);
  stdin_ = setup.stdinPipe;
  out_.fd = setup.stdoutPipe;
  err_.fd = setup.stderrPipe;
}

Process Process::fork(const std::function<int()>& body, const ProcessOptions& options) {
  Process child;
  ChildSetup setup(options);
  child.pid_ = ::fork();
  if (child.pid_ < 0) {
    setup.closeAll();
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (child.pid_ == 0) {
    setup.install();
    int code = 99;
    try {
      code = body();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  child.pidFd_ = openPidFd(child.pid_);
  child.stdin_ = setup.stdinPipe;
  child.out_.fd = setup.stdoutPipe;
  child.err_.fd = setup.stderrPipe;
  return child;
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidFd_(std::exchange(other.pidFd_, -1)),
      stdin_(std::exchange(other.stdin_, -1)),
      out_(std::exchange(other.out_, {})),
      err_(std::exchange(other.err_, {})),
      status_(other.status_) {}

Process::~Process() {
  if (pid_ > 0 && !status_.ended) {
    ::kill(pid_, SIGKILL);
    reap();
  }
  closeFd(pidFd_);
  closeFd(stdin_);
  closeFd(out_.fd);
  closeFd(err_.fd);
}

void Process::reap() {
  int raw = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &raw, 0);
  } while (r < 0 && errno == EINTR);
  status_.ended = true;
  if (r == pid_ && WIFEXITED(raw)) {
    status_.exited = true;
    status_.code = WEXITSTATUS(raw);
  } else if (r == pid_ && WIFSIGNALED(raw)) {
    status_.signal = WTERMSIG(raw);
  }
}

bool Process::pump(std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{out_.fd, POLLIN, 0}, {err_.fd, POLLIN, 0}};
  Capture* captures[2] = {&out_, &err_};
  if (out_.fd < 0 && err_.fd < 0) return false;
  if (::poll(fds, 2, static_cast<int>(timeout.count())) <= 0) return true;
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
    if (n > 0)
      captures[i]->text.append(buffer, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      closeFd(captures[i]->fd);
  }
  return out_.fd >= 0 || err_.fd >= 0;
}

void Process::drainCaptures() {
  // The child has ended: what it wrote is in the pipes. A grandchild (a daemon) may hold them
  // open, so read only what is there.
  for (Capture* capture : {&out_, &err_}) {
    while (capture->fd >= 0) {
      pollfd p{capture->fd, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
      char buffer[4096];
      const ssize_t n = ::read(capture->fd, buffer, sizeof buffer);
      if (n <= 0) break;
      capture->text.append(buffer, static_cast<std::size_t>(n));
    }
  }
}

ExitStatus Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (pid_ > 0 && !status_.ended) {
    pollfd fds[3] = {{pidFd_, POLLIN, 0}, {out_.fd, POLLIN, 0}, {err_.fd, POLLIN, 0}};
    const auto left = until(deadline);
    // Without a pidfd (an old kernel), look at the child every 10 ms.
    const auto slice = pidFd_ >= 0 ? left : std::min(left, std::chrono::milliseconds(10));
    const int ready = ::poll(fds, 3, static_cast<int>(slice.count()));
    if (ready > 0 && (fds[1].revents != 0 || fds[2].revents != 0)) pump(std::chrono::milliseconds(0));
    int raw = 0;
    if ((pidFd_ < 0 || fds[0].revents != 0) && ::waitpid(pid_, &raw, WNOHANG) == pid_) {
      status_.ended = true;
      status_.exited = WIFEXITED(raw);
      status_.code = status_.exited ? WEXITSTATUS(raw) : -1;
      status_.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
      drainCaptures();
      break;
    }
    if (left.count() == 0) break;
  }
  return status_;
}

ExitStatus Process::finish(std::chrono::milliseconds timeout) {
  wait(timeout);
  if (pid_ > 0 && !status_.ended) {
    ::kill(pid_, SIGKILL);
    reap();
    drainCaptures();
    status_.timedOut = true;
  }
  return status_;
}

void Process::signal(int signo) {
  if (pid_ > 0 && !status_.ended) ::kill(pid_, signo);
}

bool Process::waitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (out_.text.find(text) == std::string::npos) {
    const auto left = until(deadline);
    if (left.count() == 0 || !pump(left)) return out_.text.find(text) != std::string::npos;
  }
  return true;
}

std::string Process::readLine(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto newline = out_.text.find('\n', out_.consumed); newline != std::string::npos) {
      std::string line = out_.text.substr(out_.consumed, newline - out_.consumed);
      out_.consumed = newline + 1;
      return line;
    }
    const auto left = until(deadline);
    if (left.count() == 0 || !pump(left)) return {};
  }
}

void Process::writeInput(const std::string& text) {
  std::size_t written = 0;
  while (stdin_ >= 0 && written < text.size()) {
    const ssize_t n = ::write(stdin_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child is gone; its answer (none) tells the test
    written += static_cast<std::size_t>(n);
  }
}

ExitStatus runProgram(const std::vector<std::string>& argv, const std::filesystem::path& logFile,
                      std::chrono::milliseconds timeout) {
  ProcessOptions options;
  options.stdoutFile = logFile;
  options.stderrToStdout = true;
  return Process(argv, options).finish(timeout);
}

RunResult runCapturing(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                       const std::filesystem::path& stderrFile) {
  ProcessOptions options;
  options.captureStdout = true;
  options.captureStderr = stderrFile.empty();
  options.stderrFile = stderrFile;
  Process process(argv, options);
  RunResult result;
  result.status = process.finish(timeout);
  result.exitCode = result.status.exited && !result.status.timedOut ? result.status.code : -1;
  result.out = process.output();
  result.err = process.errorOutput();
  return result;
}

RunResult runTool(const std::string& name, const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{programPath(name).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCapturing(argv, timeout);
}

void becomeUser(const char* user) {
  const passwd* pw = ::getpwnam(user);
  if (pw == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0 ||
      ::getuid() == 0)
    ::_exit(kSetuidFailed);
}

ExitStatus runInChild(const std::function<int()>& body, std::chrono::milliseconds timeout) {
  ProcessOptions options;
  options.keepInheritedDescriptors = true;
  return Process::fork(body, options).finish(timeout);
}

bool waitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const int fd = openPidFd(pid);
  if (fd < 0) return errno == ESRCH;
  const auto deadline = Clock::now() + timeout;
  bool ended = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(until(deadline).count()));
    if (rc > 0) {
      ended = true;
      break;
    }
    if (rc == 0 || errno != EINTR) break;
  }
  ::close(fd);
  return ended;
}

}  // namespace qaic::testing
