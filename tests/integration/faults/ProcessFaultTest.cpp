// A process dies mid-inference: the emulator (the client must fail, bounded by its data-path
// timeout, and a new emulator serves new work) or the client (the device must give back every
// resource the client held, and serve a new run).
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

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

TEST_F(LiveFaultTest, EmulatorKilledMidInferenceFailsTheClientAndAFreshEmulatorServes) {
  auto runner = startRunner({"--time", "30", "--submit-timeout", "1000", "--submit-retry-count", "0"});
  ASSERT_TRUE(waitUntilActive(*runner));
  const auto deadShm = readSysfs("device/emu_shm_dir");
  ASSERT_TRUE(deadShm.has_value());
  const std::string deadRoot = root();
  const pid_t deadPid = emulator_->pid();
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(deadPid, SIGKILL), 0);

  // --time 30 would run for 30 s: ending within 10 s means the fault ended it.
  const ExitStatus e = runner->wait(10s);
  RecordProperty("runner_exit_ms_after_kill", std::to_string(msSince(killedAt)));
  ASSERT_TRUE(e.ended) << "the runner hung after the emulator died";
  ASSERT_TRUE(e.exited) << "the runner died of signal " << e.signal << ": " << runner->errorOutput();
  EXPECT_NE(e.code, 0) << runner->output();
  // The dead emulator never answers: the data-path timeout ends the request (a runtime that
  // noticed the lost FUSE connection could say QS_DEV_REMOVED instead, with exit code 4).
  const std::string err = runner->errorOutput();
  EXPECT_TRUE(err.find("qaic-runner: error: inference failed (QS_TIMEDOUT): no completion within 1000 ms") !=
                  std::string::npos ||
              (e.code == 4 && err.find("qaic-runner: error: inference failed (QS_DEV_REMOVED)") != std::string::npos))
      << "exit " << e.code << ": " << err;
  RecordProperty("runner_error", err);

  // The daemon's parent is init, which may reap it a moment later; until then the pid exists
  // and a new emulator would rightly take its shared memory for a live instance's.
  ASSERT_TRUE(pollUntil([&] { return ::kill(deadPid, 0) != 0 && errno == ESRCH; }, 10s))
      << "the killed emulator " << deadPid << " was not reaped within 10 s";
  startEmulator();  // a fresh root; the dead one is unmounted
  EXPECT_FALSE(isMounted(deadRoot)) << deadRoot;
  // A new emulator removes the shared memory of emulators that no longer run (docs/emulator.md).
  EXPECT_FALSE(std::filesystem::exists(*deadShm)) << *deadShm;
  EXPECT_TRUE(newRunSucceeds());
}

TEST_F(LiveFaultTest, ClientKilledMidInferenceGivesEveryResourceBack) {
  const ResourceSnapshot before = resources();
  ASSERT_EQ(before.count("dbc0_state"), 1u) << "no dbc<i>_state attributes";
  auto runner = startRunner({"--time", "30"});
  ASSERT_TRUE(waitUntilActive(*runner));
  const ResourceSnapshot during = resources();
  EXPECT_NE(during.at("nsp_free"), before.at("nsp_free")) << "the run held no NSP";
  EXPECT_NE(during.at("vc_free"), before.at("vc_free")) << "the run held no DBC";
  EXPECT_NE(during, before);

  runner->signal(SIGKILL);
  const ExitStatus e = runner->wait(10s);
  ASSERT_TRUE(e.ended);
  EXPECT_EQ(e.signal, SIGKILL);
  const auto reapedAt = std::chrono::steady_clock::now();
  ResourceSnapshot after;
  EXPECT_TRUE(pollUntil([&] { return (after = resources()) == before; }, 1s))
      << ::testing::PrintToString(after) << " instead of " << ::testing::PrintToString(before);
  RecordProperty("resources_back_ms_after_reap", std::to_string(msSince(reapedAt)));

  EXPECT_TRUE(newRunSucceeds());
  EXPECT_TRUE(pollUntil([&] { return (after = resources()) == before; }, 1s))
      << "after a clean run: " << ::testing::PrintToString(after);
}

}  // namespace
}  // namespace qaic::faults::test
