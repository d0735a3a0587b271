// SPDX-License-Identifier: Apache-2.0
// Child processes for the suites and benchmarks, every wait bounded: a program started with its
// output appended to log files or captured in pipes the test reads, and a forked function (the
// tests that drop to another user or enter a namespace). The destructor kills (SIGKILL) and reaps
// a child nobody waited for, so a failing test leaves no process behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace qaic::testing {

struct ExitStatus {
  bool ended = false;   // false: still running when the wait ran out
  bool exited = false;  // ended by exit, with `code`
  int code = -1;
  int signal = 0;         // ended by this signal
  bool timedOut = false;  // finish() killed it because its time ran out
  // The shell's convention: the exit code, 128 + the signal, -1 while running.
  int shellCode() const { return !ended ? -1 : exited ? code : 128 + signal; }
};

struct ProcessOptions {
  // Where stdout and stderr go: captured in a pipe (output(), errorOutput()), appended to a file,
  // or (neither) inherited from the test.
  bool captureStdout = false;
  bool captureStderr = false;
  std::filesystem::path stdoutFile;
  std::filesystem::path stderrFile;
  bool stderrToStdout = false;  // stderr joins stdout, wherever that goes
  bool pipeStdin = false;       // writeInput(); otherwise stdin is /dev/null
  // NAME=value entries set in the child's environment (replacing the test's value of NAME).
  std::vector<std::string> environment;
  // A forked child keeps the test's other descriptors too (a pipe it reports through).
  bool keepInheritedDescriptors = false;
};

class Process {
 public:
  // Starts argv[0] with `argv`. Throws std::runtime_error when it cannot be started.
  explicit Process(const std::vector<std::string>& argv, const ProcessOptions& options = {});
  // Forks; the child keeps only its standard descriptors (a test's connections and device files
  // must not leak into it) unless told otherwise, runs `body` and exits with its result (99 when
  // it throws).
  static Process fork(const std::function<int()>& body, const ProcessOptions& options = {});
  ~Process();
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout` for the child to end, reading captured output meanwhile; reaps it then.
  ExitStatus wait(std::chrono::milliseconds timeout);
  // wait(), and when the child is still running after `timeout`, SIGKILL and reap it.
  ExitStatus finish(std::chrono::milliseconds timeout);
  void signal(int signo);

  // Captured stdout: reads until it holds `text` (true), or it ended or `timeout` passed.
  bool waitForOutput(const std::string& text, std::chrono::milliseconds timeout);
  // Captured stdout a line at a time (without the newline); "" when none came in time.
  std::string readLine(std::chrono::milliseconds timeout);
  void writeInput(const std::string& text);
  const std::string& output() const { return out_.text; }
  const std::string& errorOutput() const { return err_.text; }

 private:
  struct Capture {
    int fd = -1;
    std::string text;
    std::size_t consumed = 0;  // by readLine
  };
  Process() = default;
  // Reads what arrives on the captures for at most `timeout`; false once they all ended.
  bool pump(std::chrono::milliseconds timeout);
  void drainCaptures();
  void reap();

  pid_t pid_ = -1;
  int pidFd_ = -1;
  int stdin_ = -1;
  Capture out_;
  Capture err_;
  ExitStatus status_;
};

// Runs `argv` to its end with stdout and stderr appended to `logFile`; killed after `timeout`.
ExitStatus runProgram(const std::vector<std::string>& argv, const std::filesystem::path& logFile,
                      std::chrono::milliseconds timeout);

struct RunResult {
  ExitStatus status;
  int exitCode = -1;  // the exit code, or -1 when it did not exit (a signal, the timeout)
  std::string out;    // captured stdout
  std::string err;    // captured stderr (empty when it went to a file)
};
// Runs `argv` to its end with its output captured (stderr into `stderrFile` when one is given);
// killed after `timeout`.
RunResult runCapturing(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                       const std::filesystem::path& stderrFile = {});
// runCapturing of the built program programPath(name) with `args`.
RunResult runTool(const std::string& name, const std::vector<std::string>& args,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
// What becomeUser exits with when it cannot become the user.
inline constexpr int kSetuidFailed = 90;

// In a forked child: drop the groups, gid and uid to those of `user`, or _exit(kSetuidFailed).
void becomeUser(const char* user);

// Runs `body` in a forked child that keeps the test's descriptors; killed after `timeout`.
ExitStatus runInChild(const std::function<int()>& body, std::chrono::milliseconds timeout);

// Waits for any process (a daemon that is not this one's child, too) to end, up to `timeout`.
bool waitForExit(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace qaic::testing
