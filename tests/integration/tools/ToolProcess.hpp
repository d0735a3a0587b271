// A tool that keeps running while the test looks at the system (qaic-util create holding a
// lease): started with its stdout and stderr on one pipe, read until a line appears, signalled,
// and waited for, every step bounded. The destructor kills and reaps it if the test did not.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace qaic::testing {

class ToolProcess {
 public:
  // Starts `path` with `args`; throws std::runtime_error when it cannot.
  ToolProcess(const std::string& path, const std::vector<std::string>& args);
  ~ToolProcess();
  ToolProcess(const ToolProcess&) = delete;
  ToolProcess& operator=(const ToolProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads until the output holds `text` (true) or the tool closed its output or `timeout`
  // passed (false).
  bool waitForOutput(const std::string& text, std::chrono::milliseconds timeout);
  void signal(int signo);
  // Reads the rest of the output and reaps the tool: its exit code, 128 + signal, or -1 when it
  // was still running after `timeout` (it is then killed).
  int wait(std::chrono::milliseconds timeout);
  const std::string& output() const { return output_; }

 private:
  // Appends what is readable within `timeout`; false at end of output.
  bool readSome(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int out_ = -1;
  std::string output_;
};

}  // namespace qaic::testing
