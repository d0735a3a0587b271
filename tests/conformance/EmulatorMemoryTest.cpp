// SPDX-License-Identifier: Apache-2.0
// The emulator gives back what a client's program used: separate qaic-runner processes run a
// real torchvision network one after another on one qaic-emu, and the emulator's resident memory
// after the last run stays within 10% of its peak during the first (docs/reliability.md).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "GeneratedData.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "Sanitizers.hpp"
#include "TempDir.hpp"

namespace qaic::conformance {
namespace {

std::string environment(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The suite runs ten runs of ResNet-18 with 3 inferences each; `make soak` runs 100 of ResNet-50
// with 5 (EMULATOR_MEMORY_MODEL, EMULATOR_MEMORY_RUNS, EMULATOR_MEMORY_INFERENCES).
TEST(EmulatorMemory, ConsecutiveClientRunsOfARealNetworkLeaveNothingBehind) {
  const std::string model = environment("EMULATOR_MEMORY_MODEL", "resnet18_full");
  const int runs = std::stoi(environment("EMULATOR_MEMORY_RUNS", "10"));
  const std::string inferences = environment("EMULATOR_MEMORY_INFERENCES", "3");
  // ResNet-18's directory is also where tests/python/test_torchvision.py finds the model.
  const std::string models = buildDir() + "/tests/conformance/memory-models" +
                             (model == "resnet18_full" ? "" : "-" + model);
  ensureGenerated("gen-models.py", models, "index.txt", std::chrono::seconds(600),
                  {"--index", "index.txt", "--models", model});
  testing::TempDir work("qaic-emu-memory");
  const std::string qpc = (work.path() / "qpc").string();
  const auto compiled = testing::runCompiler(models + "/" + model + ".onnx", qpc, {}, std::chrono::seconds(600));
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
  for (int run = 1; run <= runs; ++run) {
    const auto r = testing::runTool("qaic-runner", {"-t", qpc, "-n", inferences}, std::chrono::seconds(300));
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
    std::cout << model << " after run " << run << ": " << resident << " kB resident (peak of the first run "
              << firstRunPeak << " kB)\n";
    EXPECT_LE(resident, bound) << "run " << run << ": the emulator kept what earlier clients' programs used";
  }
}

}  // namespace
}  // namespace qaic::conformance
