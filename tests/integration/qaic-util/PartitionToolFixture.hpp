// The fixture of the partition tests of qaic-util: a real qaic-emu (one device, 8 NSPs, 8 VCs)
// on a private root with QAIC_ROOT pointing at it, QAICD_SOCKET pointing into a private
// directory, and on request a real qaicd serving that socket. Everything is stopped in
// TearDown, also after a failure.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "EmulatorProcess.hpp"
#include "QaicdProcess.hpp"
#include "TempDir.hpp"

namespace qaic::testing {

inline constexpr uint64_t kDeviceNsps = 8;
inline constexpr uint64_t kDeviceVcs = 8;

class PartitionToolTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  void startQaicd();
  std::string socketPath() const { return (work_ / "qaicd.sock").string(); }
  driver::DeviceRoot root() const { return emu_->root(); }
  // sys/class/accel/accel<id>/<name> as a number; throws when unreadable.
  uint64_t attribute(unsigned id, const std::string& name) const;
  bool nodeExists(unsigned id) const;
  // Partitions (accel100 and up) present now.
  std::vector<unsigned> partitions() const;
  // Polls `condition` every 10 ms until it holds or `timeout` passes.
  static bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    return eventually(condition, timeout);
  }

  TempDir work_{"qaic-util-partition"};
  std::unique_ptr<EmulatorProcess> emu_;
  std::unique_ptr<QaicdProcess> qaicd_;
};

// The lines of `text` from "QID <id>" up to the next "QID " block.
std::string queryBlock(const std::string& text, unsigned id);
// The number after `prefix` in `text` ("Partition " -> 100), or -1.
long numberAfter(const std::string& text, const std::string& prefix);

}  // namespace qaic::testing
