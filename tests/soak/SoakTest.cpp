// SPDX-License-Identifier: Apache-2.0
// The soak (`make soak`, never part of `make test`; docs/reliability.md): 4 client processes x 4
// threads (SoakClient.cpp: relu, the sample CNN, a torchvision model) against one qaic-emu for
// SOAK_SECONDS (default 120), while partitions are created and released through qaicd and faults
// are injected at random from a seed: a hung NSP for a while, DMA failures, device resets, and a
// client SIGKILLed (and replaced). Every request of every client that ran to its end must end
// exactly once, with the right output or the status of a fault that was injected (a killed
// client's completed requests are checked from its last progress file and count too); at least
// SOAK_MIN_REQUESTS (default 1,000,000) end;
// the clients' and the emulator's descriptors and memory are flat from the first to the last
// tenth. SOAK_SEED repeats a run; a failure names the seed.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "GeneratedData.hpp"
#include "Paths.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "QaicdProcess.hpp"
#include "Sanitizers.hpp"
#include "StressNetwork.hpp"
#include "TempDir.hpp"
#include "driver/SysfsNames.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::soak {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kClients = 4;
// The torchvision model of the mix (scripts/gen-models.py's suite: MobileNetV3-Small, 64x64).
constexpr const char* kTorchvisionModel = "mobilenet_v3_small";
// Flat: descriptors within a few (a thread may be between two sets of a reset when sampled:
// one set's node files and maps), resident memory within 8 MiB (16 under a sanitizer).
constexpr long kFdTolerance = 4;
constexpr long kRssToleranceKb = testing::kUnderSanitizer ? 16384 : 8192;

long environment(const char* name, long fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtol(text, nullptr, 10) : fallback;
}

std::filesystem::path compile(const testing::TempDir& work, const std::string& name, const std::string& ir) {
  const auto qpc = work.path() / (name + "-qpc");
  testing::compileProgram(ir, qpc, {}, 120s);
  return qpc;
}

TEST(Soak, AMillionRequestsWithFaultsEachEndOnceWithTheirOutputOrTheFaultsStatus) {
  const auto seed = static_cast<unsigned>(environment("SOAK_SEED", static_cast<long>(std::random_device{}() >> 1)));
  const double seconds = static_cast<double>(environment("SOAK_SECONDS", 120));
  const long minimum = environment("SOAK_MIN_REQUESTS", 1'000'000);
  SCOPED_TRACE("SOAK_SEED=" + std::to_string(seed) + " reproduces this run");
  std::printf("[ soak     ] seed %u, %.0f s, at least %ld requests\n", seed, seconds, minimum);
  std::mt19937 random(seed);
  // SOAK_FAULTS (default "hang,dma,reset,kill") narrows the faults down to find which one a
  // failure follows.
  const char* faultText = std::getenv("SOAK_FAULTS");
  const std::string faultNames = faultText != nullptr && *faultText != '\0' ? faultText : "hang,dma,reset,kill";
  std::vector<int> faults;
  for (const auto& [name, code] :
       std::vector<std::pair<std::string, int>>{{"hang", 0}, {"dma", 1}, {"reset", 2}, {"kill", 3}})
    if (("," + faultNames + ",").find("," + name + ",") != std::string::npos) faults.push_back(code);
  ASSERT_FALSE(faults.empty()) << "SOAK_FAULTS=" << faultNames << " names none of hang, dma, reset, kill";

  testing::TempDir work("qaic-soak");
  const auto reluIr = work.path() / "relu.json";
  std::ofstream(reluIr) << stress::reluIr();
  const auto relu = compile(work, "relu", reluIr.string());
  const auto cnn = compile(work, "smallcnn", (testing::sourceDir() / "examples/smallcnn/smallcnn.json").string());
  // Generated once into the build tree (PyTorch exports it with its input and PyTorch's output).
  const std::string models = (testing::buildDir() / "tests/soak-models").string();
  conformance::ensureGenerated("gen-models.py", models, "index.txt", 600s,
                               {"--index", "index.txt", "--models", kTorchvisionModel});
  const std::string modelBase = models + "/" + kTorchvisionModel;
  const auto model = compile(work, kTorchvisionModel, modelBase + ".onnx");

  // NSPs and DBCs for 16 sets and the partitions; a hung run is dropped after 500 ms.
  testing::EmulatorProcess emulator(
      R"({"devices": [{"nsps": 32, "dbcs": 32}], "semaphore_timeout_ms": 500, "compute_threads": 2})");
  ::setenv("QAIC_ROOT", emulator.rootPath().c_str(), 1);
  testing::QaicdProcess qaicd(emulator.rootPath(), work.path() / "qaicd.sock", work.path() / "qaicd.log");

  const auto client = testing::buildDir() / "tests/qaic_soak_client";
  const auto start = Clock::now();
  const auto runFor = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto end = start + runFor;
  struct Running {
    std::unique_ptr<testing::Process> process;
    int index = 0;
    bool killed = false;
    bool whole = false;  // ran the whole time (its usage samples are comparable)
  };
  std::vector<Running> clients;
  int nextIndex = 0;
  auto launch = [&](double runSeconds, bool whole) {
    const int index = nextIndex++;
    const auto n = std::to_string(index);
    testing::ProcessOptions log;
    log.stdoutFile = work.path() / ("client-" + n + ".log");
    log.stderrToStdout = true;
    clients.push_back(
        Running{std::make_unique<testing::Process>(
                    std::vector<std::string>{client.string(), relu.string(), cnn.string(), model.string(),
                                             modelBase + ".in0.bin", modelBase + ".out0.bin", n,
                                             std::to_string(runSeconds), (work.path() / ("result-" + n)).string()},
                    log),
                index, false, whole});
  };
  for (int c = 0; c < kClients; ++c) launch(seconds, true);

  // Partitions come and go through qaicd all along (their NSPs are not the clients' to use).
  std::atomic<bool> stopPartitions{false};
  std::atomic<long> partitionCycles{0}, partitionRefusals{0}, partitionErrors{0};
  std::string partitionError;
  std::thread partitions([&] {
    auto connection = qaicd::QaicdClient::connect((work.path() / "qaicd.sock").string(), 10s);
    if (!connection) {
      ++partitionErrors;
      partitionError = connection.message();
      return;
    }
    while (!stopPartitions) {
      auto p = connection->createPartition(qaicd::Resources{2, 0, 0, 1, 0}, 0u, "soak");
      // ENOSPC: the clients' sets hold the room; EAGAIN: the device is resetting.
      if (p && connection->release(p->id)) {
        ++partitionCycles;
      } else if (!p && (p.error() == EAGAIN || p.error() == ENOSPC)) {
        ++partitionRefusals;
      } else if (!p) {
        ++partitionErrors;
        partitionError = p.message();
      }
      std::this_thread::sleep_for(20ms);
    }
  });

  // Faults, until a second before the end (the last requests complete undisturbed).
  std::map<std::string, long> injected;
  long dmaFailuresInjected = 0;
  // The emulator's use is the highest seen in the second tenth and in the ninth tenth: what it
  // holds moves with the clients' sets (a reset or a kill makes them again), so one sample each
  // could land between two sets.
  testing::ProcessUsage emuFirst, emuLast;
  auto keepHighest = [](testing::ProcessUsage& kept, const testing::ProcessUsage& now) {
    kept.fds = std::max(kept.fds, now.fds);
    kept.rssKb = std::max(kept.rssKb, now.rssKb);
  };
  while (Clock::now() < end - 1s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(200, 1200)(random)));
    const auto now = Clock::now();
    if (now >= start + runFor / 10 && now < start + runFor * 2 / 10)
      keepHighest(emuFirst, testing::sampleUsage(emulator.pid()));
    if (now >= start + runFor * 8 / 10 && now < start + runFor * 9 / 10)
      keepHighest(emuLast, testing::sampleUsage(emulator.pid()));
    if (now >= end - 1s) break;
    const int fault = faults[std::uniform_int_distribution<std::size_t>(0, faults.size() - 1)(random)];
    switch (fault) {
      case 0: {
        const int ms = std::uniform_int_distribution<int>(50, 700)(random);
        ASSERT_TRUE(emulator.setAttribute(0, driver::sysfs::kFaultNspHang, "1"));
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        ASSERT_TRUE(emulator.setAttribute(0, driver::sysfs::kFaultNspHang, "0"));
        ++injected["hang"];
        break;
      }
      case 1: {
        const int count = std::uniform_int_distribution<int>(1, 3)(random);
        ASSERT_TRUE(emulator.setAttribute(0, driver::sysfs::kFaultDmaFail, "3 " + std::to_string(count)));
        dmaFailuresInjected += count;
        ++injected["dma_fail"];
        break;
      }
      case 2:
        ASSERT_TRUE(emulator.setAttribute(0, driver::sysfs::kFaultReset, "1"));
        ++injected["reset"];
        break;
      default: {
        // A client SIGKILLed; a new one takes its place for the rest of the run.
        std::vector<std::size_t> alive;
        for (std::size_t i = 0; i < clients.size(); ++i)
          if (!clients[i].killed) alive.push_back(i);
        Running& victim = clients[alive[std::uniform_int_distribution<std::size_t>(0, alive.size() - 1)(random)]];
        victim.process->signal(SIGKILL);
        victim.killed = true;
        ++injected["client_kill"];
        const double left = std::chrono::duration<double>(end - Clock::now()).count();
        launch(std::max(left, 1.0), false);
        break;
      }
    }
  }
  stopPartitions = true;
  partitions.join();

  long total = 0, fromKilled = 0, timedOut = 0, deviceErrors = 0, resets = 0;
  std::map<std::string, long> cnnOutputs;
  auto addFailures = [&](std::map<std::string, long>& r) {
    timedOut += r["timed_out"];
    deviceErrors += r["device_error"];
    resets += r["dev_reset"];
  };
  for (auto& c : clients) {
    const auto n = std::to_string(c.index);
    SCOPED_TRACE("client " + n);
    const auto status = c.process->finish(120s);
    if (c.killed) {
      // Its last progress file (at most half a second old): what it completed before the kill
      // counts, checked like the rest; what it had in flight died with it.
      auto r = stress::readResults(work.path() / ("result-" + n + ".progress"));
      EXPECT_EQ(r["duplicates_or_unknown"], 0);
      EXPECT_EQ(r["wrong"], 0) << "successful requests with a wrong output";
      EXPECT_EQ(r["unexpected_status"], 0) << "requests that failed with a status no injected fault explains: "
                                           << testing::readFile(work.path() / ("result-" + n + ".progress"));
      total += r["completions"];
      fromKilled += r["completions"];
      addFailures(r);
      continue;
    }
    ASSERT_EQ(status.shellCode(), 0) << testing::readFile(work.path() / ("client-" + n + ".log"));
    auto r = stress::readResults(work.path() / ("result-" + n));
    EXPECT_EQ(r["completions"], r["submitted"]) << "one completion per submitted request";
    EXPECT_EQ(r["lost"], 0);
    EXPECT_EQ(r["duplicates_or_unknown"], 0);
    EXPECT_EQ(r["wrong"], 0) << "successful requests with a wrong output";
    EXPECT_EQ(r["unexpected_status"], 0) << "requests that failed with a status no injected fault explains: "
                                         << testing::readFile(work.path() / ("result-" + n));
    if (c.whole) {
      ASSERT_GT(r["fd_first"], 0);
      EXPECT_LE(r["fd_last"], r["fd_first"] + kFdTolerance);
      EXPECT_LE(r["rss_kb_last"], r["rss_kb_first"] + kRssToleranceKb);
    }
    for (const std::string key : {"cnn_output_0", "cnn_output_1", "cnn_output_2", "cnn_output_3", "model_output"}) {
      if (r[key] == 0) continue;
      auto [it, fresh] = cnnOutputs.emplace(key, r[key]);
      EXPECT_TRUE(fresh || it->second == r[key]) << key << " differs between clients";
    }
    EXPECT_NE(r["model_output"], 0) << "no " << kTorchvisionModel << " inference succeeded";
    std::printf(
        "[ soak     ] client %s: %ld requests (%ld ok, %ld timed out, %ld device errors, %ld resets), sets "
        "made %ld, fds %ld -> %ld, VmRSS %ld -> %ld kB\n",
        n.c_str(), r["completions"], r["ok"], r["timed_out"], r["device_error"], r["dev_reset"], r["sets_made"],
        r["fd_first"], r["fd_last"], r["rss_kb_first"], r["rss_kb_last"]);
    total += r["completions"];
    addFailures(r);
  }
  // A failure's status must be one of a fault that was injected, and no more DMA failures than
  // the device was told to make.
  if (injected["hang"] == 0) {
    EXPECT_EQ(timedOut, 0);
  }
  EXPECT_LE(deviceErrors, dmaFailuresInjected);
  if (injected["reset"] == 0) {
    EXPECT_EQ(resets, 0);
  }
  EXPECT_GE(total, minimum);
  EXPECT_EQ(partitionErrors.load(), 0) << partitionError;
  ASSERT_GT(emuFirst.fds, 0) << "no sample of the emulator in the second tenth";
  ASSERT_GT(emuLast.fds, 0) << "no sample of the emulator in the ninth tenth";
  EXPECT_LE(emuLast.fds, emuFirst.fds + kFdTolerance);
  EXPECT_LE(emuLast.rssKb, emuFirst.rssKb + kRssToleranceKb);
  std::printf(
      "[ soak     ] seed %u: %ld requests in %.0f s by %d clients (%ld of them by clients later killed; %ld timed "
      "out, %ld device errors, %ld resets); faults: %ld hangs, %ld DMA failures (%ld requests), %ld resets, %ld clients killed; %ld "
      "partition cycles (%ld refused: no room or resetting); qaic-emu fds %ld -> %ld, VmRSS %ld -> %ld kB\n",
      seed, total, seconds, nextIndex, fromKilled, timedOut, deviceErrors, resets, injected["hang"],
      injected["dma_fail"], dmaFailuresInjected, injected["reset"], injected["client_kill"], partitionCycles.load(),
      partitionRefusals.load(), emuFirst.fds, emuLast.fds, emuFirst.rssKb, emuLast.rssKb);
  ::unsetenv("QAIC_ROOT");
}

}  // namespace
}  // namespace qaic::soak
