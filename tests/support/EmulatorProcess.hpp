// SPDX-License-Identifier: Apache-2.0
// One qaic-emu on a private root: a daemon (--daemon, the default) or a foreground child,
// stopped (SIGTERM; after 5 s its FUSE connection aborted and SIGKILL) and unmounted in the
// destructor, so a failing test never leaves a mount behind. Its log (stdout and stderr) is a
// file beside the root. The binary is programPath("qaic-emu").
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Paths.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "driver/DeviceRoot.hpp"

namespace qaic::testing {

struct EmulatorOptions {
  std::string config;                  // JSON (docs/emulator.md) written beside the root; "": defaults
  std::vector<std::string> arguments;  // more command-line arguments, e.g. {"--devices", "3"}
  std::filesystem::path root;          // mount here (an existing directory); empty: a fresh one
  bool foreground = false;             // a --foreground child of the test instead of a daemon
};

class EmulatorProcess {
 public:
  // Throws std::runtime_error with the emulator's log when it does not come up.
  explicit EmulatorProcess(const std::string& config = {});
  explicit EmulatorProcess(const EmulatorOptions& options);
  ~EmulatorProcess();
  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  driver::DeviceRoot root() const { return driver::DeviceRoot(root_); }
  const std::filesystem::path& rootPath() const { return root_; }
  pid_t pid() const { return pid_; }
  std::string log() const;

  // $root/dev/accel/accel<device> and sys/class/accel/accel<device>/<name>.
  std::filesystem::path nodePath(unsigned device) const;
  std::filesystem::path attributePath(unsigned device, const std::string& name) const;
  // The attribute's text without its trailing newline ("" when unreadable).
  std::string attribute(unsigned device, const std::string& name) const;
  bool setAttribute(unsigned device, const std::string& name, const std::string& value) const;
  // Removes the device as a surprise removal does (its fault/remove attribute).
  bool removeDevice(unsigned device) const;

  // SIGTERM, then unmount whatever is left; idempotent. True when SIGTERM alone stopped it (a
  // foreground child: with exit code 0, which under LeakSanitizer also means nothing leaked)
  // and it unmounted its root itself.
  bool stop();
  // SIGKILL, and the mount is left as a crash leaves it: stale (the recovery tests). Nothing
  // unmounts it afterwards; the next emulator on the same root must recover it.
  void kill();

  static std::filesystem::path binary();

 private:
  bool mounted() const;
  void abortConnection() const;

  TempDir work_{"qaic-emu"};  // config.json, emu.log and (by default) root/
  std::filesystem::path root_;
  std::optional<Process> child_;  // foreground mode
  pid_t pid_ = -1;
  dev_t fuseDevice_ = 0;  // the mount's device: names its fusectl connection
  bool running_ = false;
  bool crashed_ = false;  // kill(): the stale mount is the test's
};

// The BOs an emulator's devices hold now: the ranges of pages in the memory-accel<N> files of its
// shm_dir (each BO is one, with a hole after it; a freed BO's range is punched out).
int liveBoRanges(const std::filesystem::path& shmDir);

}  // namespace qaic::testing
