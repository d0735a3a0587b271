// The emulator gives back what a client's program used: separate qaic-runner processes run a
// real torchvision network one after another on one qaic-emu, and the emulator's resident memory
// after the last run stays within 10% of its peak during the first (docs/reliability.md).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "EmulatorProcess.hpp"
#include "GeneratedData.hpp"
#include "Process.hpp"
#include "Sanitizers.hpp"
#include "TempDir.hpp"

namespace qaic::conformance {
namespace {

// A field of /proc/<pid>/status in kB (VmRSS, VmHWM).
uint64_t statusKilobytes(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  throw std::runtime_error("/proc/" + std::to_string(pid) + "/status: no " + field);
}

TEST(EmulatorMemory, ConsecutiveClientRunsOfResNet18LeaveNothingBehind) {
  const std::string models = buildDir() + "/tests/conformance/memory-models";
  ensureGenerated("gen-models.py", models, "index.txt", std::chrono::seconds(280),
                  {"--index", "index.txt", "--models", "resnet18_full"});
  testing::TempDir work("qaic-emu-memory");
  const std::string qpc = (work.path() / "qpc").string();
  const auto compiled = testing::runTool("qaic-exec", {"-m=" + models + "/resnet18_full.onnx", "-aic-binary-dir=" + qpc},
                                         std::chrono::seconds(120));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;

  testing::EmulatorProcess emulator;
  ::setenv("QAIC_ROOT", emulator.rootPath().c_str(), 1);
  uint64_t firstRunPeak = 0;
  uint64_t bound = 0;
  for (int run = 1; run <= 10; ++run) {
    const auto r = testing::runTool("qaic-runner", {"-t", qpc, "-n", "3"}, std::chrono::seconds(120));
    ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    if (run == 1) {
      firstRunPeak = statusKilobytes(emulator.pid(), "VmHWM");
      // Under AddressSanitizer the emulator's heap is the sanitizer's allocator, not glibc's: its
      // quarantine keeps up to 256 MiB of freed memory (the default quarantine_size_mb) on top.
      bound = firstRunPeak + firstRunPeak / 10 + (testing::kAddressSanitizer ? 256 * 1024 : 0);
    }
    // The client's device file is released after the process has exited (FUSE delivers the
    // release later), so the memory comes back shortly after, not at once: wait for it.
    uint64_t resident = statusKilobytes(emulator.pid(), "VmRSS");
    for (int poll = 0; poll < 100 && resident > bound; ++poll) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      resident = statusKilobytes(emulator.pid(), "VmRSS");
    }
    std::cout << "after run " << run << ": " << resident << " kB resident (peak of the first run "
              << firstRunPeak << " kB)\n";
    EXPECT_LE(resident, bound) << "run " << run << ": the emulator kept what earlier clients' programs used";
  }
}

}  // namespace
}  // namespace qaic::conformance
