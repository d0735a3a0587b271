// One qaic-emu daemon on a private mkdtemp root: started with --daemon, stopped (SIGTERM, then
// SIGKILL) and unmounted in the destructor, so a failing test never leaves a mount behind.
// The binary is $QAIC_BUILD_DIR/bin/qaic-emu.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "driver/DeviceRoot.hpp"

namespace qaic::emu::test {

// $QAIC_BUILD_DIR and $QAIC_SOURCE_DIR, or the directories this suite was configured with.
std::filesystem::path buildDir();
std::filesystem::path sourceDir();

class EmulatorProcess {
 public:
  // `configJson` (docs/emulator.md) is written next to the root; empty means the defaults.
  // Throws std::runtime_error with the emulator's log when it does not come up.
  explicit EmulatorProcess(const std::string& configJson = {});
  ~EmulatorProcess();
  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  driver::DeviceRoot root() const { return driver::DeviceRoot(root_); }
  pid_t pid() const { return pid_; }
  std::string log() const;

  // Stops the daemon (SIGTERM; after 5 s abort its FUSE connection and SIGKILL) and unmounts;
  // idempotent. Returns false unless SIGTERM alone stopped it and it unmounted its root.
  bool stop();

  static std::filesystem::path binary();

 private:
  bool mounted() const;
  void unmount() const;
  void abortConnection() const;

  std::filesystem::path work_;  // holds root/, config.json and emu.log
  std::filesystem::path root_;
  pid_t pid_ = -1;
  dev_t fuseDevice_ = 0;  // the mount's device: names its fusectl connection
  bool running_ = false;
};

}  // namespace qaic::emu::test
