// SPDX-License-Identifier: Apache-2.0
// A process dies mid-inference: the emulator (the client must see a lost device, whatever its
// data-path timeout, and a new emulator serves new work) or the client (the device must give back
// every resource the client held, and serve a new run).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "DeviceAttributes.hpp"
#include "FaultRig.hpp"

namespace qaic::faults::test {
namespace {

using namespace std::chrono_literals;

long long msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

bool isMounted(const std::string& path) {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line))
    if (line.find(" " + path + " ") != std::string::npos) return true;
  return false;
}

// qaic-util -q against this fixture's root: its exit code and its stdout and stderr.
struct UtilRun {
  int code = -1;
  std::string text;
};
UtilRun queryDevices(const std::string& root) {
  testing::ProcessOptions options;
  options.captureStdout = options.captureStderr = true;
  options.environment = {"QAIC_ROOT=" + root};
  Process util({testing::programPath("qaic-util").string(), "-q"}, options);
  const ExitStatus e = util.wait(30s);
  return {e.exited ? e.code : -1, util.output() + util.errorOutput()};
}

// qaic-runner after its device was lost at `lostAt` (`how`: the property's name): it ends by
// itself, exit 4, naming the lost device, never as a timeout.
void expectLostDeviceExit(Process& runner, std::chrono::steady_clock::time_point lostAt, const std::string& how) {
  const ExitStatus e = runner.wait(40s);
  const long long exitMs = msSince(lostAt);
  ::testing::Test::RecordProperty("runner_exit_ms_after_" + how, std::to_string(exitMs));
  ASSERT_TRUE(e.ended) << "the runner hung after the device was lost (" << how << ")";
  ASSERT_TRUE(e.exited) << "the runner died of signal " << e.signal << ": " << runner.errorOutput();
  const std::string err = runner.errorOutput();
  ::testing::Test::RecordProperty("runner_error_after_" + how, err);
  EXPECT_EQ(e.code, 4) << err;
  // "inference failed (QS_DEV_REMOVED): ..." when a request ends so, "QS_DEV_REMOVED: ..." when a
  // call the runner makes (a submission, a wait) throws it first.
  EXPECT_NE(err.find("QS_DEV_REMOVED"), std::string::npos) << err;
  EXPECT_NE(err.find("device 0"), std::string::npos) << "the lost device is not named: " << err;
  EXPECT_EQ(err.find("QS_TIMEDOUT"), std::string::npos) << err;
  // A correctness bound, far from both the 1 s goal and the 30 s the timeouts would take.
  EXPECT_LT(exitMs, 5000) << err;
}

// With the runner's default data-path timeout and retries (5 s x 6 tries), a dead emulator used
// to cost 30 s and end as QS_TIMEDOUT: the loss is seen by itself now, and named.
TEST_F(LiveFaultTest, EmulatorKilledMidInferenceIsALostDeviceAndAFreshEmulatorServes) {
  auto runner = startRunner({"--time", "60"});
  ASSERT_TRUE(waitUntilActive(*runner));
  const auto deadShm = readSysfs(driver::sysfs::kEmuShmDir);
  ASSERT_TRUE(deadShm.has_value());
  const std::string deadRoot = root();
  const pid_t deadPid = emulator_->pid();
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(deadPid, SIGKILL), 0);

  expectLostDeviceExit(*runner, killedAt, "kill");

  const UtilRun query = queryDevices(deadRoot);
  EXPECT_EQ(query.code, 1) << query.text;
  EXPECT_NE(query.text.find("are gone"), std::string::npos) << query.text;

  // No wait for the dead emulator to be reaped: its instance lock went with it.
  startEmulator();  // a fresh root; the dead one is unmounted
  EXPECT_FALSE(isMounted(deadRoot)) << deadRoot;
  // A new emulator removes the shared memory of emulators that no longer run (docs/emulator.md).
  EXPECT_FALSE(std::filesystem::exists(*deadShm)) << *deadShm;
  EXPECT_TRUE(newRunSucceeds());
}

// The `abort` file of the FUSE connection behind `root`. fusectl is mounted when it is not (as
// root, as CI runs; systemd mounts it on most machines): a test that cannot abort fails, it does
// not skip.
std::filesystem::path fusectlAbortFile(const std::string& root) {
  const std::filesystem::path connections = "/sys/fs/fuse/connections";
  if (!isMounted(connections.string()) && ::mount("fusectl", connections.c_str(), "fusectl", 0, nullptr) != 0 &&
      errno != EBUSY)
    ADD_FAILURE() << "cannot mount fusectl on " << connections << ": " << std::strerror(errno);
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) ADD_FAILURE() << "cannot stat " << root << ": " << std::strerror(errno);
  return connections / std::to_string(minor(st.st_dev)) / "abort";
}

// The kernel side of a lost device without a dead process: the FUSE connection is aborted (as an
// administrator does through fusectl, or the kernel on a fatal protocol error), the emulator is
// still there. The client must see the loss as it sees a killed emulator.
TEST_F(LiveFaultTest, AbortedFuseConnectionIsALostDevice) {
  auto runner = startRunner({"--time", "60"});
  ASSERT_TRUE(waitUntilActive(*runner));
  const auto abortFile = fusectlAbortFile(root());
  ASSERT_TRUE(std::filesystem::exists(abortFile)) << abortFile << " missing: the root's connection is not listed";
  const auto abortedAt = std::chrono::steady_clock::now();
  {
    std::ofstream abort(abortFile);
    abort << "1";
    abort.close();
    ASSERT_TRUE(abort.good()) << "writing " << abortFile << " failed";
  }

  expectLostDeviceExit(*runner, abortedAt, "abort");

  const UtilRun query = queryDevices(root());
  EXPECT_EQ(query.code, 1) << query.text;
  EXPECT_NE(query.text.find("are gone"), std::string::npos) << query.text;

  startEmulator();
  EXPECT_TRUE(newRunSucceeds());
}

TEST_F(LiveFaultTest, ClientKilledMidInferenceGivesEveryResourceBack) {
  const ResourceSnapshot before = resources();
  ASSERT_EQ(before.count("dbc0_state"), 1u) << "no dbc<i>_state attributes";
  auto runner = startRunner({"--time", "30"});
  ASSERT_TRUE(waitUntilActive(*runner));
  const ResourceSnapshot during = resources();
  EXPECT_NE(during.at(driver::sysfs::kEmuNspFree), before.at(driver::sysfs::kEmuNspFree)) << "the run held no NSP";
  EXPECT_NE(during.at(driver::sysfs::kEmuVcFree), before.at(driver::sysfs::kEmuVcFree)) << "the run held no DBC";
  EXPECT_NE(during, before);

  runner->signal(SIGKILL);
  const ExitStatus e = runner->wait(10s);
  ASSERT_TRUE(e.ended);
  EXPECT_EQ(e.signal, SIGKILL);
  const auto reapedAt = std::chrono::steady_clock::now();
  ResourceSnapshot after;
  EXPECT_TRUE(testing::eventually([&] { return (after = resources()) == before; }, 1s))
      << ::testing::PrintToString(after) << " instead of " << ::testing::PrintToString(before);
  RecordProperty("resources_back_ms_after_reap", std::to_string(msSince(reapedAt)));

  EXPECT_TRUE(newRunSucceeds());
  EXPECT_TRUE(testing::eventually([&] { return (after = resources()) == before; }, 1s))
      << "after a clean run: " << ::testing::PrintToString(after);
}

}  // namespace
}  // namespace qaic::faults::test
