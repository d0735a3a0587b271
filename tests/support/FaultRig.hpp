// SPDX-License-Identifier: Apache-2.0
// The fixture of the fault tests: the seed-000 "regular" network (out = in0 + in0, in1 relu'd;
// 4-element int32/float buffers) compiled once by the real qaic-exec, a fresh qaic-emu per test,
// qaic-runner started in the background against it, and reads of the device's sysfs.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "EmulatorProcess.hpp"
#include "Process.hpp"
#include "TempDir.hpp"

namespace qaic::faults::test {

using testing::ExitStatus;
using testing::Process;

// The resources a run holds on device 0: nsp_free, vc_free, dram_free and every dbc<i>_state.
using ResourceSnapshot = std::map<std::string, std::string>;

class LiveFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  static std::filesystem::path qpcDir();
  std::filesystem::path testDir() const { return dir_.path(); }

  // A fresh emulator, replacing (and stopping) the current one.
  void startEmulator();
  std::string root() const;
  // sysfs attribute of accel0 (relative to sys/class/accel/accel0), whitespace trimmed; nullopt
  // when it cannot be read.
  std::optional<std::string> readSysfs(const std::string& attribute) const;
  void writeSysfs(const std::string& attribute, const std::string& value) const;
  ResourceSnapshot resources() const;

  // qaic-runner on the regular network with `extra` options, in the background, its stdout and
  // stderr captured (output(), errorOutput()).
  std::unique_ptr<Process> startRunner(const std::vector<std::string>& extra);
  // Waits until the runner has its network active on the device (so it is mid-inference).
  ::testing::AssertionResult waitUntilActive(Process& runner);
  // A short runner run that must succeed: the device serves new work.
  ::testing::AssertionResult newRunSucceeds();

  std::unique_ptr<testing::EmulatorProcess> emulator_;

 private:
  static testing::TempDir* suiteDir_;
  testing::TempDir dir_{"qaic-fault-test"};
};

}  // namespace qaic::faults::test
