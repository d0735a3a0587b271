// Test helper: a real qaic-emu process on a fresh temporary root, stopped with SIGTERM.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace qaic::emu::test {

// A directory from mkdtemp, removed (if empty) when destroyed.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "qaic-emu-test");
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string emulatorBinary();  // $QAIC_BUILD_DIR/bin/qaic-emu

// Runs `argv` (argv[0] is the program) and returns its exit status (-1 when it did not exit
// within `timeout`, after which it is killed).
int runToExit(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

class EmuProcess {
 public:
  // Starts `qaic-emu --root <root> --foreground <extra...>` and waits until accel0 is visible.
  explicit EmuProcess(const std::string& root, std::vector<std::string> extra = {});
  ~EmuProcess();
  EmuProcess(const EmuProcess&) = delete;
  EmuProcess& operator=(const EmuProcess&) = delete;

  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }
  const std::string& root() const { return root_; }
  // SIGTERM, then the exit status (-1 if it did not exit within 20 s and had to be killed).
  int stop();
  void kill9();  // leaves a stale mount behind

  std::string sysPath(int device, const std::string& attribute) const;
  std::string devPath(int device) const;
  std::string readAttribute(int device, const std::string& attribute) const;  // trimmed
  bool writeAttribute(int device, const std::string& attribute, const std::string& value) const;

 private:
  std::string root_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

// Polls `condition` every 10 ms until it holds or `timeout` passes.
template <typename Fn>
bool eventually(Fn condition, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

bool waitForPath(const std::string& path, std::chrono::milliseconds timeout);
std::string readFile(const std::string& path);

}  // namespace qaic::emu::test

#include <thread>

template <typename Fn>
bool qaic::emu::test::eventually(Fn condition, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}
