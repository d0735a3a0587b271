// SPDX-License-Identifier: Apache-2.0
// Three client processes, four threads each, submitting to one emulator for a fixed time through
// libqaic: every request completes exactly once with the right output, and neither the clients
// nor the emulator grow in file descriptors or memory while the load is steady.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "Sanitizers.hpp"
#include "StressNetwork.hpp"

namespace qaic::stress {
namespace {

using namespace std::chrono_literals;

constexpr int kClients = 3;
constexpr int kThreadsPerClient = 4;
constexpr double kRunSeconds = 8.0;
// Growth allowed between two samples taken under steady load: each client samples itself at the
// end of the first and the start of the last tenth of its run; the emulator is sampled a tenth
// and eight tenths of a run after the last client started (the clients start a little apart).
// Descriptors: none (the load is steady, every request's resources are reused). Memory: allocator
// arenas and page-cache-backed maps settle a little late, so up to 4 MiB.
// Under AddressSanitizer or ThreadSanitizer (the whole build is instrumented alike) the
// sanitizer's allocator caches, shadow and (TSan) synchronisation metadata grow under load
// (measured between the two samples: up to 9.2 MiB for ASan clients, 2.9 MiB for TSan clients and
// 2.0 MiB for the TSan emulator, against 4 MiB), so 16 MiB there. Under ASan a leak still fails
// the run, as LeakSanitizer makes the client exit nonzero; the plain build keeps 4 MiB.
constexpr long kFdTolerance = 0;
constexpr long kRssToleranceKb = qaic::testing::kUnderSanitizer ? 16384 : 4096;
// Each client should finish far more than this in 8 s; fewer means the pipeline stalled.
constexpr long kMinimumPerClient = 50;

class ManyClientsStressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Under AddressSanitizer freed memory sits in a quarantine (256 MiB by default) and counts
    // in VmRSS, which would read as a leak; the emulator and the clients inherit this.
    const char* asan = std::getenv("ASAN_OPTIONS");
    savedAsanOptions_ = asan != nullptr ? std::optional<std::string>(asan) : std::nullopt;
    ::setenv("ASAN_OPTIONS", ((asan != nullptr ? std::string(asan) + ":" : "") + "quarantine_size_mb=0").c_str(), 1);
    emu_ = std::make_unique<testing::EmulatorProcess>();
    ::setenv("QAIC_ROOT", emu_->rootPath().c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("QAIC_ROOT");
    if (savedAsanOptions_)
      ::setenv("ASAN_OPTIONS", savedAsanOptions_->c_str(), 1);
    else
      ::unsetenv("ASAN_OPTIONS");
    if (emu_) emu_->stop();
    emu_.reset();
  }

  // Compiles the relu network with the real qaic-exec; returns its programqpc directory.
  std::filesystem::path compileRelu() {
    const auto ir = work_ / "relu.json";
    std::ofstream(ir) << reluIr();
    const auto qpc = work_ / "relu-qpc";
    const auto compiled = testing::runCompiler(ir, qpc);
    EXPECT_EQ(compiled.exitCode, 0) << "qaic-exec: " << compiled.err << compiled.out;
    return qpc;
  }

  testing::TempDir work_{"qaic-stress"};
  std::optional<std::string> savedAsanOptions_;
  std::unique_ptr<testing::EmulatorProcess> emu_;
};

TEST_F(ManyClientsStressTest, EveryRequestCompletesOnceAndNothingLeaks) {
  const auto qpc = compileRelu();
  ASSERT_FALSE(HasFailure());
  const auto client = testing::buildDir() / "tests/qaic_stress_client";

  const auto launched = std::chrono::steady_clock::now();
  std::vector<testing::Process> clients;
  for (int c = 0; c < kClients; ++c) {
    const auto n = std::to_string(c);
    testing::ProcessOptions log;
    log.stdoutFile = work_ / ("client-" + n + ".log");
    log.stderrToStdout = true;
    clients.emplace_back(std::vector<std::string>{client.string(), qpc.string(), n, std::to_string(kThreadsPerClient),
                                                  std::to_string(kRunSeconds), (work_ / ("result-" + n)).string()},
                         log);
  }
  // The emulator is sampled on the parent's clock, counted from when every client has activated
  // and started its load, so activation costs stay out of the comparison.
  const auto allReady = [&] {
    for (int c = 0; c < kClients; ++c)
      if (!std::filesystem::exists(work_ / ("result-" + std::to_string(c) + ".ready"))) return false;
    return true;
  };
  while (!allReady() && std::chrono::steady_clock::now() < launched + 30s) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(allReady()) << "the clients did not start within 30 s";
  const auto loaded = std::chrono::steady_clock::now();
  const auto runFor = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(kRunSeconds));
  std::this_thread::sleep_until(loaded + runFor / 10);
  const testing::ProcessUsage emuFirst = testing::sampleSettledUsage(emu_->pid());
  std::this_thread::sleep_until(loaded + runFor * 8 / 10);
  const testing::ProcessUsage emuLast = testing::sampleSettledUsage(emu_->pid());

  long total = 0;
  for (int c = 0; c < kClients; ++c) {
    const auto n = std::to_string(c);
    const int code = clients[static_cast<std::size_t>(c)].finish(60s).shellCode();
    ASSERT_EQ(code, 0) << "client " << c << ": " << testing::readFile(work_ / ("client-" + n + ".log"));
    auto r = readResults(work_ / ("result-" + n));
    SCOPED_TRACE("client " + n);
    EXPECT_GE(r["submitted"], kMinimumPerClient);
    EXPECT_EQ(r["completions"], r["submitted"]) << "one completion per submitted request";
    EXPECT_EQ(r["lost"], 0);
    EXPECT_EQ(r["duplicates_or_unknown"], 0);
    EXPECT_EQ(r["wrong"], 0) << "outputs that are not relu(input)";
    EXPECT_EQ(r["failed"], 0) << "requests that completed with an error";
    EXPECT_EQ(r["drained"], 1);
    EXPECT_EQ(r["wait_status"], 0);
    EXPECT_EQ(r["acquire_timeouts"], 0);
    ASSERT_GT(r["fd_first"], 0);
    ASSERT_GT(r["rss_kb_first"], 0);
    EXPECT_LE(r["fd_last"], r["fd_first"] + kFdTolerance);
    EXPECT_LE(r["rss_kb_last"], r["rss_kb_first"] + kRssToleranceKb);
    std::printf("[ stress   ] client %d: %ld requests, fds %ld -> %ld, VmRSS %ld -> %ld kB\n", c, r["completions"],
                r["fd_first"], r["fd_last"], r["rss_kb_first"], r["rss_kb_last"]);
    total += r["completions"];
  }
  ASSERT_GT(emuFirst.fds, 0);
  ASSERT_GT(emuFirst.rssKb, 0);
  EXPECT_LE(emuLast.fds, emuFirst.fds + kFdTolerance);
  EXPECT_LE(emuLast.rssKb, emuFirst.rssKb + kRssToleranceKb);
  EXPECT_TRUE(emu_->stop()) << "the emulator did not stop cleanly after the load: " << emu_->log();
  std::printf(
      "[ stress   ] %ld requests completed by %d clients x %d threads in %.0f s; qaic-emu fds %ld -> %ld, VmRSS %ld -> %ld kB\n",
      total, kClients, kThreadsPerClient, kRunSeconds, emuFirst.fds, emuLast.fds, emuFirst.rssKb, emuLast.rssKb);
  RecordProperty("requests_completed", std::to_string(total));
}

}  // namespace
}  // namespace qaic::stress
