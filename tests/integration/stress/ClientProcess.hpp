// A program started in the background (posix_spawn) with its output appended to a log file.
// The owner waits for it with a bound; the destructor kills and reaps it if nobody did.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace qaic::stress {

class ClientProcess {
 public:
  // Throws std::runtime_error when the program cannot be started.
  ClientProcess(const std::vector<std::string>& argv, const std::string& logFile);
  ~ClientProcess();
  ClientProcess(const ClientProcess&) = delete;
  ClientProcess& operator=(const ClientProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout`, then kills it. Returns the exit code, or -1 when it was killed or
  // died of a signal.
  int wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace qaic::stress
