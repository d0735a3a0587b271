// Child processes for the suite, each with a bounded wait: a program run to completion (its
// output logged, or its stdout captured), and a forked function (for the permission tests that drop to another uid).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace qaic::emu::test {

struct ExitStatus {
  bool exited = false;    // false: killed by a signal or by the timeout
  int code = -1;          // exit code when exited
  bool timedOut = false;
};

// Waits for any process (child or not) to end, up to `timeout`, through a pidfd.
bool waitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Runs `argv` with stdout and stderr appended to `logFile`; kills it after `timeout`.
ExitStatus runProgram(const std::vector<std::string>& argv, const std::string& logFile,
                      std::chrono::milliseconds timeout);

struct ProgramOutput {
  ExitStatus status;
  std::string stdoutText;
};

// Runs `argv` with stdout captured and stderr appended to `logFile`. Reads stdout until the
// program closes it or `timeout` passes, then waits for the exit for the rest of the timeout (at
// least a second) and kills it after that.
ProgramOutput runProgramCapturingStdout(const std::vector<std::string>& argv, const std::string& logFile,
                                        std::chrono::milliseconds timeout);

// What becomeUser exits with when it cannot become the user.
inline constexpr int kSetuidFailed = 90;

// In a forked child: drop the groups, gid and uid to those of `user`, or _exit(kSetuidFailed).
void becomeUser(const char* user);

// Forks; the child runs `body` and _exits with its result (a C++ exception is exit code 99).
// The parent kills the child after `timeout`.
ExitStatus runInChild(const std::function<int()>& body, std::chrono::milliseconds timeout);

}  // namespace qaic::emu::test
