// SPDX-License-Identifier: Apache-2.0
// The suite's fixture: a fresh qaic-emu on its own root for every test (started in SetUp,
// stopped and unmounted in TearDown even when the test failed), plus the small helpers every
// test uses. The device is small (4 NSPs, 4 DBCs) so exhaustion is cheap to reach.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "DeviceClient.hpp"
#include "EmulatorProcess.hpp"
#include "ResultAssertions.hpp"

namespace qaic::testing {

inline constexpr uint32_t kTestNsps = 4;
inline constexpr uint32_t kTestDbcs = 4;

// accel0 open, the relu test program active on a DBC whose completions signal `interrupt`, and
// that DBC's window mapped: where most ring tests start.
struct ReluOnRing {
  driver::DeviceNode node;
  driver::CompletionEvent interrupt;
  uint32_t dbc;
  driver::DbcWindow window;
};

class EmuTest : public ::testing::Test {
 public:
  // False once the daemon has died: waits for ring responses stop early instead of timing out.
  bool emulatorAlive() const;

 protected:
  // Overridden by tests that need another device (fault defaults, one NSP, ...).
  virtual std::string config() const;
  // More qaic-emu arguments (e.g. --no-passthrough); none by default.
  virtual std::vector<std::string> arguments() const { return {}; }

  void SetUp() override;
  void TearDown() override;

  driver::DeviceRoot root() const { return emu_->root(); }
  driver::SysfsDevice sysfs() const { return driver::SysfsDevice(root(), 0); }
  // Opens accel0 or throws with the errno.
  driver::DeviceNode openNode() const;
  uint64_t attribute(const std::string& name) const;  // readU64 or throws
  // Loads the relu test program with `loadId` and activates it; returns the DBC.
  uint32_t activateRelu(const driver::DeviceNode& node, uint32_t loadId = 1, uint32_t queueSize = 16,
                        int eventfd = 0) const;
  // Opens accel0 and activates relu (load id 1) with an interrupt eventfd; throws when a step
  // fails.
  ReluOnRing activateReluOnRing(uint32_t queueSize = 16) const;

  std::unique_ptr<EmulatorProcess> emu_;
  std::vector<std::byte> relu_;
};

// accel0 open, the relu test program active (load id 1) on a DBC with `queueSize` ring slots, and
// a BO of kBoBytes to attach: where the slice and execute tests start.
class BoOnReluTest : public EmuTest {
 protected:
  static constexpr uint64_t kBoBytes = 8192;

  explicit BoOnReluTest(uint32_t queueSize = 16) : queueSize_(queueSize) {}
  void SetUp() override;
  void TearDown() override;

  // An ATTACH_SLICE_BO header for the whole BO on the DBC.
  qaic_attach_slice_hdr header(uint32_t dir = QAIC_DIR_TO_DEVICE) const;

  std::unique_ptr<driver::DeviceNode> node_;
  std::unique_ptr<driver::BufferObject> bo_;
  uint32_t dbc_ = 0;

 private:
  uint32_t queueSize_;
};

// Waits for exactly one response on `window` (interrupt-driven), up to `timeout`; fails the test
// early if the emulator died. Returns {0xffff, 0xffff} when nothing came.
driver::ResponseElement awaitOneResponse(const EmuTest& test, driver::DbcWindow& window,
                                         const driver::CompletionEvent& interrupt, std::chrono::milliseconds timeout);

// PRIME on the emulated node, by raw ioctl. exportBo opens the BO's memory file as the kernel
// would make the dma-buf (read-write with DRM_RDWR, close-on-exec with DRM_CLOEXEC) and lets the
// device check it (docs/emulator.md, PRIME): the descriptor, or -errno. importFd: the handle, or
// -errno.
int exportBo(const driver::DeviceNode& node, uint32_t handle, uint32_t flags = 0x80002 /*RDWR|CLOEXEC*/);
int64_t importFd(const driver::DeviceNode& node, int fd);

// An address no process_vm_readv can read: a PROT_NONE page, unmapped in the destructor.
class UnreadablePage {
 public:
  UnreadablePage();
  ~UnreadablePage();
  UnreadablePage(const UnreadablePage&) = delete;
  UnreadablePage& operator=(const UnreadablePage&) = delete;
  uint64_t address() const { return reinterpret_cast<uintptr_t>(page_); }

 private:
  void* page_;
};

}  // namespace qaic::testing
