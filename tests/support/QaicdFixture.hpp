// The fixture of the qaicd suite: a fresh qaic-emu on its own root and a qaicd serving it on a
// socket in a private directory (both stopped in TearDown, even after a failure), plus helpers
// that read the device's sysfs and wait with bounded polls.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "EmulatorProcess.hpp"
#include "QaicdProcess.hpp"
#include "TempDir.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::qaicd::test {

inline constexpr uint32_t kDeviceNsps = 8;
inline constexpr uint32_t kDeviceVcs = 8;

class QaicdTest : public ::testing::Test {
 protected:
  virtual std::string emulatorConfig() const;
  virtual std::vector<std::string> qaicdArgs() const { return {}; }
  // Runs in SetUp once work() and the emulator exist, before qaicd starts.
  virtual void beforeQaicd() {}

  void SetUp() override;
  void TearDown() override;

  std::string rootPath() const { return emu_->rootPath().string(); }
  std::string socketPath() const { return (work_ / "qaicd.sock").string(); }
  std::filesystem::path work() const { return work_.path(); }
  QaicdClient connect() const;  // fails the test on error (returns a client anyway or throws)
  void startQaicd(const std::vector<std::string>& extra = {});
  bool stopQaicd();

  // sys/class/accel/accel<index>/<name> as a number; throws when unreadable.
  uint64_t attribute(unsigned index, const std::string& name) const;
  // Indices of the accel nodes with index >= 100 (partitions) present now.
  std::vector<unsigned> partitionNodes() const;
  // Device `index` has all its NSPs and VCs free and no partition node exists (false while
  // anything is unreadable).
  bool deviceWhole(unsigned index = 0) const;
  // Adds a device through the emulator's bus (sys/bus/qaic-emu/add_device); true once `client`
  // lists `devices` devices (within 10 s).
  bool addDevice(QaicdClient& client, std::size_t devices) const;
  // Polls `condition` every 5 ms until it holds or `timeout` passes.
  static bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    return testing::eventually(condition, timeout, std::chrono::milliseconds(5));
  }

  std::unique_ptr<testing::EmulatorProcess> emu_;
  std::unique_ptr<testing::QaicdProcess> qaicd_;
  testing::TempDir work_{"qaicd-test"};
};

}  // namespace qaic::qaicd::test
