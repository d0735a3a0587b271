// SPDX-License-Identifier: Apache-2.0
// The one emulator + qaicd fixture: a fresh qaic-emu (by default one device, 8 NSPs, 8 VCs) on
// its own root and a qaicd serving it on a socket in a private directory (both stopped in
// TearDown, even after a failure, with qaicd's log shown when the test failed), plus the device's
// sysfs figures and partition nodes. Suites without qaicd (the runtime's) turn it off with
// qaicdAtSetUp(). Tests wait with eventually (TempDir.hpp). qaicd's tests speak to it through
// its client library (QaicdClient), which this header brings in for them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "EmulatorProcess.hpp"
#include "QaicdProcess.hpp"
#include "TempDir.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::testing {

inline constexpr uint32_t kDeviceNsps = 8;
inline constexpr uint32_t kDeviceVcs = 8;

class QaicdFixture : public ::testing::Test {
 protected:
  virtual std::string emulatorConfig() const;
  // More qaic-emu arguments (e.g. --trace-requests).
  virtual std::vector<std::string> emulatorArguments() const { return {}; }
  virtual std::vector<std::string> qaicdArgs() const { return {}; }
  // Runs in SetUp once work() and the emulator exist, before qaicd starts.
  virtual void beforeQaicd() {}
  // Whether SetUp starts qaicd; when not, the test calls startQaicd() itself if it needs one.
  virtual bool qaicdAtSetUp() const { return true; }

  void SetUp() override;
  void TearDown() override;

  std::string rootPath() const { return emu_->rootPath().string(); }
  driver::DeviceRoot root() const { return emu_->root(); }
  std::string socketPath() const { return (work_ / "qaicd.sock").string(); }
  std::filesystem::path work() const { return work_.path(); }
  qaicd::QaicdClient connect() const;  // throws on error
  void startQaicd(const std::vector<std::string>& extra = {});
  bool stopQaicd();

  // sys/class/accel/accel<index>/<name> as a number; throws when unreadable.
  uint64_t attribute(unsigned index, const std::string& name) const;
  bool nodeExists(unsigned index) const;
  // Indices of the accel nodes with index >= 100 (partitions) present now.
  std::vector<unsigned> partitionNodes() const;
  // Device `index` has all its NSPs and VCs free and no partition node exists (false while
  // anything is unreadable).
  bool deviceWhole(unsigned index = 0) const;
  // Adds a device through the emulator's bus (sys/bus/qaic-emu/add_device); true once `client`
  // lists `devices` devices (within 10 s).
  bool addDevice(qaicd::QaicdClient& client, std::size_t devices) const;

  std::unique_ptr<EmulatorProcess> emu_;
  std::unique_ptr<QaicdProcess> qaicd_;
  TempDir work_{"qaicd-test"};
};

}  // namespace qaic::testing
