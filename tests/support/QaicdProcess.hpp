// SPDX-License-Identifier: Apache-2.0
// One qaicd daemon for a test: started with --daemon (so it is ready when the constructor
// returns), stopped with SIGTERM (SIGKILL after 10 s) in stop() or the destructor. Its stderr
// (-v) goes to a log file the failure messages include. The binary is programPath("qaicd").
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace qaic::testing {

class QaicdProcess {
 public:
  // Throws std::runtime_error with the log when it does not start.
  QaicdProcess(const std::filesystem::path& root, const std::filesystem::path& socket,
               const std::filesystem::path& logFile, const std::vector<std::string>& extraArgs = {});
  ~QaicdProcess();
  QaicdProcess(const QaicdProcess&) = delete;
  QaicdProcess& operator=(const QaicdProcess&) = delete;

  pid_t pid() const { return pid_; }
  // SIGTERM and wait; true when it exited within 10 s. Idempotent.
  bool stop();
  std::string log() const;

  static std::filesystem::path binary();

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_;
};

}  // namespace qaic::testing
