// The emulator gives back what a client's program used: separate qaic-runner processes run a
// real torchvision network one after another on one qaic-emu, and the emulator's resident memory
// after the last run stays within 10% of its peak during the first (docs/reliability.md).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "EmulatorProcess.hpp"
#include "GeneratedData.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "Sanitizers.hpp"
#include "TempDir.hpp"

namespace qaic::conformance {
namespace {

TEST(EmulatorMemory, ConsecutiveClientRunsOfResNet18LeaveNothingBehind) {
  const std::string models = buildDir() + "/tests/conformance/memory-models";
  ensureGenerated("gen-models.py", models, "index.txt", std::chrono::seconds(280),
                  {"--index", "index.txt", "--models", "resnet18_full"});
  testing::TempDir work("qaic-emu-memory");
  const std::string qpc = (work.path() / "qpc").string();
  const auto compiled = testing::runTool(
      "qaic-exec", {"-m=" + models + "/resnet18_full.onnx", "-aic-binary-dir=" + qpc}, std::chrono::seconds(120));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;

  testing::EmulatorProcess emulator;
  ::setenv("QAIC_ROOT", emulator.rootPath().c_str(), 1);
  long firstRunPeak = 0;
  long bound = 0;
  // The emulator's VmRSS, failing the test when /proc cannot tell it.
  auto residentKb = [&] {
    const long kb = testing::sampleUsage(emulator.pid()).rssKb;
    if (kb < 0) throw std::runtime_error("/proc/" + std::to_string(emulator.pid()) + "/status: no VmRSS");
    return kb;
  };
  for (int run = 1; run <= 10; ++run) {
    const auto r = testing::runTool("qaic-runner", {"-t", qpc, "-n", "3"}, std::chrono::seconds(120));
    ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    if (run == 1) {
      firstRunPeak = testing::sampleUsage(emulator.pid()).peakRssKb;
      ASSERT_GT(firstRunPeak, 0) << "/proc/" << emulator.pid() << "/status: no VmHWM";
      // Under AddressSanitizer the emulator's heap is the sanitizer's allocator, not glibc's: its
      // quarantine keeps up to 256 MiB of freed memory (the default quarantine_size_mb) on top.
      bound = firstRunPeak + firstRunPeak / 10 + (testing::kAddressSanitizer ? 256 * 1024 : 0);
    }
    // The client's device file is released after the process has exited (FUSE delivers the
    // release later), so the memory comes back shortly after, not at once: wait for it.
    long resident = residentKb();
    for (int poll = 0; poll < 100 && resident > bound; ++poll) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      resident = residentKb();
    }
    std::cout << "after run " << run << ": " << resident << " kB resident (peak of the first run " << firstRunPeak
              << " kB)\n";
    EXPECT_LE(resident, bound) << "run " << run << ": the emulator kept what earlier clients' programs used";
  }
}

}  // namespace
}  // namespace qaic::conformance
