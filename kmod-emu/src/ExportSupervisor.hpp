// SPDX-License-Identifier: Apache-2.0
// Unmodified PRIME export under `qaic-emu --namespace`: the kernel's DRM_IOCTL_PRIME_HANDLE_TO_FD
// creates a dma-buf descriptor in the caller, which a FUSE server cannot do. The command runs
// under a seccomp filter that hands exactly that ioctl to a supervisor thread of the emulator
// (seccomp user notification); the supervisor makes the export on the caller's own open file and
// installs the descriptor in the caller with SECCOMP_IOCTL_NOTIF_ADDFD (docs/emulator.md,
// "Showing the card to unmodified programs" and "Buffer objects, GEM and PRIME").
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>

#include "base/UniqueFd.hpp"

namespace qaic::emu {

// The descriptor the device makes for the supervisor (Device::primeHandleToFd) reaches the
// supervisor thread through the kernel, as the FUSE reply to the supervisor's own ioctl, which
// ThreadSanitizer cannot see. The device stores its number here (release) before replying and
// the supervisor loads it (acquire) before using it: a pair that states the order the kernel
// already gives.
std::atomic<int>& exportHandOver();

// What the child of runInEmulatedNamespace needs to put itself under the filter, made before
// the fork so that the child only makes system calls: the filter program and a socket pair over
// which the child sends the filter's listener to the emulator.
class ExportInterception {
 public:
  // Throws std::system_error when the socket pair cannot be made.
  ExportInterception();

  // In the child, async-signal-safe: installs the filter (with NO_NEW_PRIVS only if the child
  // may not install one without), sends its listener to the emulator and closes both sockets.
  // False, with a message on stderr, when the filter could not be installed: the command then
  // runs without it and a plain export gets EBADF, as outside the namespace.
  bool installInChild();

  // In the emulator after the fork: the listener the child sent, or none when it sent nothing
  // (it could not install the filter, or never got that far).
  UniqueFd receiveListener();

 private:
  std::array<sock_filter, 8> program_{};
  UniqueFd emulatorEnd_, childEnd_;
};

// The thread that answers the filter's notifications; it runs from construction until the
// destructor stops and joins it (runInEmulatedNamespace owns it for as long as the command runs).
class ExportSupervisor {
 public:
  // `root` is the emulator's mount point: only descriptors of its device nodes are answered
  // here, every other descriptor's ioctl goes on to the kernel unchanged.
  ExportSupervisor(const std::string& root, UniqueFd listener);
  ~ExportSupervisor();
  ExportSupervisor(const ExportSupervisor&) = delete;
  ExportSupervisor& operator=(const ExportSupervisor&) = delete;

 private:
  void serve();
  bool isDeviceNode(int fd) const;

  std::string accelDirectory_;
  dev_t mountDevice_ = 0;
  seccomp_notif_sizes sizes_{};
  UniqueFd listener_;
  UniqueFd stop_;  // eventfd: readable once the destructor asks the thread to end
  std::thread thread_;
};

}  // namespace qaic::emu
