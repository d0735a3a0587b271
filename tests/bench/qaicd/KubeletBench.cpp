// SPDX-License-Identifier: Apache-2.0
// The kubelet device plugin's speed (make bench; never ctest), against baselines of the same run:
//   Allocate of one whole device, and of one partition, with 64 emulated devices (48 offered
//   whole, 16 given to a 2-NSP profile: 32 partition units): p50 and p99 per call, goal
//   p99 <= 10 ms; baseline: an empty gRPC round trip on the same socket (GetDevicePluginOptions).
//   A health change (qaic-emu/fault/error written) until ListAndWatch delivers it: p50, p99, goal
//   <= 500 ms; baseline: qaicd's health poll period.
// The kubelet is the test suite's stand-in; qaic-emu and qaicd are the real programs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

#include "EmulatorProcess.hpp"
#include "KubeletStandIn.hpp"
#include "QaicdProcess.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"
#include "kubelet/KubeletPlugin.hpp"

namespace qaic::qaicd::bench {
namespace {

using namespace std::chrono_literals;
using test::DeviceWatch;

constexpr unsigned kDevices = 64, kWholeDevices = 48;
const std::string kWhole = "qualcomm.com/qaic", kProfile = "qualcomm.com/qaic-2nsp";

std::string emulatorConfig() {
  std::string devices;
  for (unsigned i = 0; i < kDevices; ++i)
    devices += std::string(i ? "," : "") + R"({"nsps": 4, "dbcs": 4, "ddr_mb": 2048})";
  return R"({"devices": [)" + devices + R"(], "compute_threads": 1})";
}

struct Rig {
  Rig() {
    emu = std::make_unique<testing::EmulatorProcess>(emulatorConfig());
    char pattern[] = "/tmp/qaicd-kubelet-bench-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp");
    work = pattern;
    kubeletDir = work / "device-plugins";
    std::filesystem::create_directories(kubeletDir);
    std::string profileDevices;
    for (unsigned d = kWholeDevices; d < kDevices; ++d)
      profileDevices += (d == kWholeDevices ? "" : ",") + std::to_string(d);
    std::ofstream(work / "qaicd.json") << R"({"k8s_profiles": [{"name": "qaic-2nsp", "devices": [)" + profileDevices +
                                              R"(], "numNsp": 2, "numVc": 2}]})";
    kubelet = std::make_unique<test::KubeletStandIn>(kubeletDir);
    qaicd = std::make_unique<testing::QaicdProcess>(
        emu->root().path(), work / "qaicd.sock", work / "qaicd.log",
        std::vector<std::string>{"--kubelet-dir", kubeletDir.string(), "--config", (work / "qaicd.json").string()});
    if (kubelet->waitForRegistrations(2, 60s).size() < 2) throw std::runtime_error("no registration\n" + qaicd->log());
    for (const std::string& resource : {kWhole, kProfile}) {
      stubs[resource] = test::dialPlugin(kubeletDir / ("qaicd-" + resource.substr(resource.find('/') + 1) + ".sock"));
      watches[resource] = std::make_unique<DeviceWatch>(*stubs[resource]);
      const std::size_t expected = resource == kWhole ? kWholeDevices : 2 * (kDevices - kWholeDevices);
      auto listed = watches[resource]->waitFor(
          [&](const DeviceWatch::Devices& d) { return test::countHealthy(d) == expected; }, 60s);
      if (!listed) throw std::runtime_error(resource + " never listed every unit\n" + qaicd->log());
      for (const auto& d : *listed) ids[resource].push_back(d.id());
    }
  }
  ~Rig() {
    watches.clear();
    stubs.clear();
    qaicd.reset();
    kubelet.reset();
    emu.reset();
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
  }
  std::unique_ptr<testing::EmulatorProcess> emu;
  std::filesystem::path work, kubeletDir;
  std::unique_ptr<test::KubeletStandIn> kubelet;
  std::unique_ptr<testing::QaicdProcess> qaicd;
  std::map<std::string, std::unique_ptr<v1beta1::DevicePlugin::Stub>> stubs;
  std::map<std::string, std::unique_ptr<DeviceWatch>> watches;
  std::map<std::string, std::vector<std::string>> ids;
};

Rig& rig() {
  static Rig instance;
  return instance;
}

// Per-call latencies of every benchmark, for the percentiles.
std::map<std::string, std::vector<double>> gSeconds;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

void record(benchmark::State& state, const std::string& name, double seconds) {
  state.SetIterationTime(seconds);
  gSeconds[name].push_back(seconds);
}

void addPercentiles(benchmark::State& state, const std::string& name) {
  state.counters["p50_us"] = percentile(gSeconds[name], 0.50) * 1e6;
  state.counters["p99_us"] = percentile(gSeconds[name], 0.99) * 1e6;
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void allocate(benchmark::State& state, const std::string& resource, const std::string& name) {
  auto& stub = *rig().stubs.at(resource);
  const auto& ids = rig().ids.at(resource);
  std::size_t next = 0;
  for (auto _ : state) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(ids[next++ % ids.size()]);
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status status = stub.Allocate(&context, request, &response);
    record(state, name, since(start));
    if (!status.ok()) return state.SkipWithError(status.error_message().c_str());
  }
  addPercentiles(state, name);
}

void BM_AllocateWholeDevice(benchmark::State& state) { allocate(state, kWhole, "allocate-whole"); }
BENCHMARK(BM_AllocateWholeDevice)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_AllocatePartition(benchmark::State& state) { allocate(state, kProfile, "allocate-partition"); }
BENCHMARK(BM_AllocatePartition)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_Baseline_EmptyRoundTrip(benchmark::State& state) {
  auto& stub = *rig().stubs.at(kWhole);
  for (auto _ : state) {
    v1beta1::DevicePluginOptions options;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status status = stub.GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
    record(state, "empty", since(start));
    if (!status.ok()) return state.SkipWithError(status.error_message().c_str());
  }
  addPercentiles(state, "empty");
}
BENCHMARK(BM_Baseline_EmptyRoundTrip)->UseManualTime()->Unit(benchmark::kMicrosecond);

// One iteration: a whole device's fault/error flipped (1, then 0 in the next), timed from the
// write until the stream delivers the device with the new health. Each write waits a different
// pause first (0..240 ms, untimed), so the writes fall at every phase of qaicd's health poll
// instead of always just after the tick that delivered the previous change.
void BM_HealthChangeToStream(benchmark::State& state) {
  DeviceWatch& watch = *rig().watches.at(kWhole);
  unsigned flips = 0;
  for (auto _ : state) {
    const unsigned device = (flips / 2) % 8;
    const bool error = flips % 2 == 0;
    ++flips;
    const std::string id = rig().ids.at(kWhole)[device];
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds((flips * 37) % 241));
    state.ResumeTiming();
    const std::size_t from = watch.updates();
    const auto start = std::chrono::steady_clock::now();
    auto written = driver::SysfsDevice(rig().emu->root(), device).write(driver::sysfs::kFaultError, error ? "1" : "0");
    if (!written) return state.SkipWithError(written.message().c_str());
    std::size_t index = 0;
    auto seen = watch.waitFor(
        [&](const DeviceWatch::Devices& d) {
          const auto* unit = test::findDevice(d, id);
          return unit != nullptr && (unit->health() == "Unhealthy") == error;
        },
        10s, from, &index);
    if (!seen) return state.SkipWithError("the health change never reached the stream");
    record(state, "health", std::chrono::duration<double>(watch.arrival(index) - start).count());
  }
  addPercentiles(state, "health");
}
BENCHMARK(BM_HealthChangeToStream)->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond);

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace
}  // namespace qaic::qaicd::bench

int main(int argc, char** argv) {
  using namespace qaic::qaicd::bench;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  const auto ms = [](const std::string& name, double p) { return percentile(gSeconds[name], p) * 1e3; };
  std::printf("\nkubelet plugin on %s, %u nproc, %u emulated devices:\n", cpuName().c_str(),
              std::thread::hardware_concurrency(), kDevices);
  const double empty = ms("empty", 0.99);
  for (const auto& [name, label] : {std::pair<std::string, std::string>{"allocate-whole", "Allocate of a whole device"},
                                    {"allocate-partition", "Allocate of a partition"}}) {
    if (gSeconds[name].empty()) continue;
    const double p99 = ms(name, 0.99);
    std::printf("%s: p50 %.3f ms, p99 %.3f ms (%s the <= 10 ms goal); empty gRPC round trip p99 %.3f ms: ratio %.2fx\n",
                label.c_str(), ms(name, 0.5), p99, p99 <= 10 ? "meets" : "MISSES", empty, empty > 0 ? p99 / empty : 0);
  }
  if (!gSeconds["health"].empty()) {
    const double p99 = ms("health", 0.99);
    std::printf(
        "health change to ListAndWatch: p50 %.1f ms, p99 %.1f ms (%s the <= 500 ms goal); health poll period %u ms: "
        "ratio %.2fx\n",
        ms("health", 0.5), p99, p99 <= 500 ? "meets" : "MISSES", qaic::qaicd::KubeletPlugin::kHealthPollMs,
        p99 / qaic::qaicd::KubeletPlugin::kHealthPollMs);
  }
  benchmark::Shutdown();
  return 0;
}
