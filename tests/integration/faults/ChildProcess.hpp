// A client program (qaic-runner) run in the background so a test can act on the device, or kill
// the client, while it is mid-inference. Its stdout and stderr go to files read after it ends;
// the destructor SIGKILLs and reaps a child still running, so a failing test leaves no process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace qaic::faults::test {

struct ChildExit {
  bool ended = false;   // false: still running when the wait ran out
  bool exited = false;  // ended by exit (not by a signal)
  int code = -1;        // exit code when exited
  int signal = 0;       // terminating signal otherwise
};

class ChildProcess {
 public:
  // Starts `program` with `args`, QAIC_ROOT set to `qaicRoot`; output goes to logDir/<tag>.out/.err.
  ChildProcess(const std::string& program, const std::vector<std::string>& args, const std::string& qaicRoot,
               const std::filesystem::path& logDir, const std::string& tag);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout` for the child to end; reaps it when it does.
  ChildExit wait(std::chrono::milliseconds timeout);
  void kill(int signal);
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  ChildExit exit_;
  std::filesystem::path outPath_;
  std::filesystem::path errPath_;
};

}  // namespace qaic::faults::test
