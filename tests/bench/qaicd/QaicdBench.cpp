// SPDX-License-Identifier: Apache-2.0
// qaicd benchmarks (make bench; never ctest), each against a baseline measured in the same run:
//   partition create+release through qaicd   vs  the same two MANAGE ioctls sent directly
//                                                 (and one bare MANAGE status round trip)
//   100 clients asking for a 1-NSP partition at once: time until all are answered, reported
//   per request, vs one client's create latency.
// One qaic-emu (two 64-NSP devices, room for 100 one-NSP partitions) and one qaicd serve all.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <latch>
#include <map>
#include <memory>
#include <thread>

#include "EmulatorProcess.hpp"
#include "QaicdProcess.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::qaicd::bench {
namespace {

using namespace std::chrono_literals;

constexpr int kConcurrentClients = 100;

struct Rig {
  Rig() {
    emu = std::make_unique<testing::EmulatorProcess>(
        R"({"devices": [{"nsps": 64, "dbcs": 64}, {"nsps": 64, "dbcs": 64}], "compute_threads": 1})");
    socket = (work / "qaicd.sock").string();
    qaicd = std::make_unique<testing::QaicdProcess>(emu->rootPath(), socket, work / "qaicd.log");
  }
  ~Rig() {
    qaicd.reset();
    emu.reset();
  }
  uint64_t freeNsps() const {
    uint64_t total = 0;
    for (unsigned d : {0u, 1u}) {
      auto v = driver::SysfsDevice(emu->root(), d).readU64(driver::sysfs::kEmuNspFree);
      total += v ? *v : 0;
    }
    return total;
  }
  std::unique_ptr<testing::EmulatorProcess> emu;
  testing::TempDir work{"qaicd-bench"};
  std::string socket;
  std::unique_ptr<testing::QaicdProcess> qaicd;
};

Rig& rig() {
  static Rig instance;
  return instance;
}

driver::PartitionRequest partitionRequest(driver::PartitionOp op, uint32_t id) {
  driver::PartitionRequest r{};
  r.magic = driver::kPartitionMagic;
  r.version = driver::kPartitionVersion;
  r.op = static_cast<uint32_t>(op);
  r.partitionId = id;
  if (op == driver::PartitionOp::Create) {
    r.resources.numNsp = 1;
    r.resources.numVc = 1;
    r.ownerUid = ::getuid();
    r.ownerGid = ::getgid();
    r.mode = 0600;
    r.holderPid = ::getpid();
  }
  return r;
}

void BM_Baseline_ManageStatusRoundTrip(benchmark::State& state) {
  auto node = driver::DeviceNode::open(rig().emu->root(), 1);
  if (!node) return state.SkipWithError(node.message().c_str());
  for (auto _ : state) {
    auto status = driver::queryStatus(*node);
    if (!status) return state.SkipWithError(status.message().c_str());
  }
}
BENCHMARK(BM_Baseline_ManageStatusRoundTrip)->UseRealTime();

// What qaicd does for one lease, without qaicd: create and remove through MANAGE directly.
void BM_Baseline_DirectPartitionCreateRemove(benchmark::State& state) {
  auto node = driver::DeviceNode::open(rig().emu->root(), 1);
  if (!node) return state.SkipWithError(node.message().c_str());
  for (auto _ : state) {
    auto created = driver::partitionCommand(*node, partitionRequest(driver::PartitionOp::Create, 0));
    if (!created || created->status != 0) return state.SkipWithError("direct create");
    auto removed = driver::partitionCommand(*node, partitionRequest(driver::PartitionOp::Remove, created->partitionId));
    if (!removed) return state.SkipWithError(removed.message().c_str());
  }
}
BENCHMARK(BM_Baseline_DirectPartitionCreateRemove)->UseRealTime();

void BM_QaicdCreateRelease(benchmark::State& state) {
  auto client = QaicdClient::connect(rig().socket);
  if (!client) return state.SkipWithError(client.message().c_str());
  for (auto _ : state) {
    auto p = client->createPartition(Resources{1, 0, 0, 1, 0}, 1u);
    if (!p) return state.SkipWithError(p.message().c_str());
    if (auto r = client->release(p->id); !r) return state.SkipWithError(r.message().c_str());
  }
}
BENCHMARK(BM_QaicdCreateRelease)->UseRealTime();

void BM_Baseline_QaicdCreateOneClient(benchmark::State& state) {
  auto client = QaicdClient::connect(rig().socket);
  if (!client) return state.SkipWithError(client.message().c_str());
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto p = client->createPartition(Resources{1, 0, 0, 1, 0});
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!p) return state.SkipWithError(p.message().c_str());
    if (auto r = client->release(p->id); !r) return state.SkipWithError(r.message().c_str());
  }
}
BENCHMARK(BM_Baseline_QaicdCreateOneClient)->UseManualTime();

// All clients are connected and waiting at a latch; the clock runs from their release until the
// last answer. Their partitions go when the connections close, before the next round.
void BM_Qaicd100ClientsAtOnce(benchmark::State& state) {
  const uint64_t freeBefore = rig().freeNsps();
  for (auto _ : state) {
    std::vector<std::optional<QaicdClient>> clients(kConcurrentClients);
    for (auto& c : clients) {
      auto connected = QaicdClient::connect(rig().socket);
      if (!connected) return state.SkipWithError(connected.message().c_str());
      c.emplace(std::move(*connected));
    }
    std::latch ready(kConcurrentClients + 1), done(kConcurrentClients);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (auto& c : clients)
      threads.emplace_back([&, client = &*c] {
        ready.arrive_and_wait();
        if (!client->createPartition(Resources{1, 0, 0, 1, 0})) ++failures;
        done.count_down();
      });
    ready.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    done.wait();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (auto& t : threads) t.join();
    if (failures != 0) return state.SkipWithError("a concurrent create failed");
    clients.clear();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (rig().freeNsps() != freeBefore && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    if (rig().freeNsps() != freeBefore) return state.SkipWithError("partitions were not returned");
  }
}
BENCHMARK(BM_Qaicd100ClientsAtOnce)->UseManualTime()->Unit(benchmark::kMillisecond);

// Keeps each benchmark's real time per iteration for the ratio lines printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs)
      if (!run.error_occurred && run.run_type == Run::RT_Iteration)
        seconds[run.benchmark_name()] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
  }
  std::map<std::string, double> seconds;
};

}  // namespace
}  // namespace qaic::qaicd::bench

int main(int argc, char** argv) {
  using qaic::qaicd::bench::RatioReporter;
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto find = [&](const std::string& prefix) -> double {
    for (const auto& [name, s] : reporter.seconds)
      if (name.rfind(prefix, 0) == 0) return s;
    return 0;
  };
  const double direct = find("BM_Baseline_DirectPartitionCreateRemove");
  const double status = find("BM_Baseline_ManageStatusRoundTrip");
  const double viaQaicd = find("BM_QaicdCreateRelease");
  const double one = find("BM_Baseline_QaicdCreateOneClient");
  const double hundred = find("BM_Qaicd100ClientsAtOnce");
  std::printf("\n");
  if (direct > 0 && viaQaicd > 0)
    std::printf("ratio: qaicd create+release / direct MANAGE create+remove: %.2fx (%.1f us vs %.1f us)\n",
                viaQaicd / direct, viaQaicd * 1e6, direct * 1e6);
  if (status > 0 && viaQaicd > 0)
    std::printf("ratio: qaicd create+release / one bare MANAGE round trip: %.2fx (%.1f us vs %.1f us)\n",
                viaQaicd / status, viaQaicd * 1e6, status * 1e6);
  if (one > 0 && hundred > 0)
    std::printf(
        "ratio: per-request mean with %d clients at once / one client's create: %.2fx (%.1f us vs %.1f us; all answered in %.1f ms)\n",
        qaic::qaicd::bench::kConcurrentClients, hundred / qaic::qaicd::bench::kConcurrentClients / one,
        hundred / qaic::qaicd::bench::kConcurrentClients * 1e6, one * 1e6, hundred * 1e3);
  benchmark::Shutdown();
  return 0;
}
