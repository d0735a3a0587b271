// One qaicd daemon for a test: started with --daemon (so it is ready when the constructor
// returns), stopped with SIGTERM (SIGKILL after 10 s) in stop() or the destructor. Its stderr
// (-v) goes to a log file the failure messages include. The binary is $QAIC_BUILD_DIR/bin/qaicd.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace qaic::qaicd::test {

struct LaunchResult {
  int exitCode = -1;   // of the --daemon launcher; -1 when it did not exit in time
  std::string stdoutText;
};

// Runs `argv` with stdout captured and stderr appended to `logFile`, waiting up to 60 s.
LaunchResult launch(const std::vector<std::string>& argv, const std::string& logFile);

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

}  // namespace qaic::qaicd::test
