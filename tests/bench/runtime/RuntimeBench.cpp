// SPDX-License-Identifier: Apache-2.0
// libqaic data-path benchmarks against a real qaic-emu, each with its same-run baseline:
//   TinySyncRoundTrip        one relu over 16 floats: getAvailable, submit, getCompletedId, put
//   FutexRoundTripBaseline   a cross-process futex ping-pong (the floor of any device round trip)
//   TinySyncVsFutexInterleaved  the two in alternating blocks, medians compared (the goal's ratio)
//   Throughput/threads:4     4 application threads sharing a set of setSize 10, with the CPU time
//                            per inference of this process and of the emulator
//   Dma64MiB                 a 64 MiB input and output in DMA buffers through one inference
//   Heap64MiB                the same through heap buffers (the runtime's staging, one copy each
//                            way)
//   Memcpy64MiBBaseline      copying 64 MiB in and 64 MiB out
//   SharedInput64MiBTwoDevices  one 64 MiB input in device 0's DMA buffer, given by its dma-buf
//                            descriptor to a set on device 1 too: one inference on each device
//                            per iteration, with the bytes the host copied per inference
//   Memcpy64MiBOnceBaseline  one memcpy of 64 MiB
//   TinySyncIoUringVsSyscalls   the tiny round trip with the data path's futex calls through
//                            io_uring, in blocks alternating with the plain system calls
//   IdleEmulatorCpu          the emulator's CPU use over 10 s with an activation and no requests
// QAIC_BENCH_DATAPATH_POLLING=1 starts the emulator with the module parameter datapath_polling,
// QAIC_BENCH_POLL_INTERVAL_US=N with datapath_poll_interval_us N.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <qaic/qaic.hpp>

#include "AlternatingBlocks.hpp"
#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "FutexPingPong.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "TempDir.hpp"
#include "driver/FutexRing.hpp"

namespace {

using namespace qaic::rt;
namespace fs = std::filesystem;

struct Session {
  std::unique_ptr<qaic::testing::EmulatorProcess> emulator;
  std::unique_ptr<qaic::testing::TempDir> work;
  std::shared_ptr<Context> context;
};
Session* session = nullptr;

std::shared_ptr<Qpc> compileRelu(const std::string& name, uint64_t elements) {
  const fs::path ir = *session->work / (name + ".json");
  const std::string dims = "[1," + std::to_string(elements) + "]";
  std::ofstream(ir) << R"({"ops":[{"name":"relu","optype":"relu","tensors_in":[{"arg_name":"src","name":"x"}],)"
                       R"("tensors_out":[{"arg_name":"dst","name":"y"}],"params":[]}],"io":[)"
                       R"({"name":"x","tensor":"x","direction":"in","dtype":"TL_FLOAT","dims":)" +
                           dims +
                           "},"
                           R"({"name":"y","tensor":"y","direction":"out","dtype":"TL_FLOAT","dims":)" +
                           dims + "}]}";
  const fs::path out = *session->work / (name + "-qpc");
  qaic::testing::compileProgram(ir, out, {}, std::chrono::seconds(120));
  return Qpc::Factory(out.string());
}

// One synchronous inference over heap or DMA QBuffers.
void inferOnce(InferenceSet& set, const std::vector<QBuffer>& buffers, uint64_t id, benchmark::State& state) {
  shInferenceHandle h;
  if (set.getAvailable(h, 10'000'000) != QS_SUCCESS) return state.SkipWithError("getAvailable timed out");
  h->setBuffers(buffers);
  set.submit(h, id);
  shInferenceHandle done;
  if (set.getCompletedId(done, id, 30'000'000) != QS_SUCCESS) {
    if (done) set.putCompleted(done);
    return state.SkipWithError("inference failed");
  }
  set.putCompleted(done);
}

QBuffer heap(std::vector<float>& v) {
  QBuffer b;
  b.buf = reinterpret_cast<uint8_t*>(v.data());
  b.size = v.size() * sizeof(float);
  return b;
}

void TinySyncRoundTrip(benchmark::State& state) {
  auto set = InferenceSet::Factory(session->context, compileRelu("tiny", 16), 0, 1, 1);
  std::vector<float> x(16, -1.0f), y(16);
  uint64_t id = 0;
  for (auto _ : state) inferOnce(*set, {heap(x), heap(y)}, ++id, state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TinySyncRoundTrip)->UseRealTime();

void FutexRoundTripBaseline(benchmark::State& state) {
  qaic::bench::FutexPingPong pingPong;
  if (!pingPong.ok()) return state.SkipWithError("could not start the futex responder");
  for (auto _ : state)
    if (!pingPong.roundTrip(std::chrono::seconds(5))) return state.SkipWithError("no pong within 5 s");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(FutexRoundTripBaseline)->UseRealTime();

// The goal's comparison: blocks of 32 futex round trips alternating with blocks of 32 tiny
// inferences (tests/bench/support/AlternatingBlocks.hpp says why blocks), medians compared.
void TinySyncVsFutexInterleaved(benchmark::State& state) {
  qaic::bench::FutexPingPong pingPong;
  if (!pingPong.ok()) return state.SkipWithError("could not start the futex responder");
  auto set = InferenceSet::Factory(session->context, compileRelu("tiny-interleaved", 16), 0, 1, 1);
  std::vector<float> x(16, -1.0f), y(16);
  uint64_t id = 0;
  qaic::bench::compareInAlternatingBlocks(
      state, 32, "futex", [&] { return pingPong.roundTrip(std::chrono::seconds(5)); }, "sync",
      [&] {
        inferOnce(*set, {heap(x), heap(y)}, ++id, state);
        return !state.error_occurred();
      },
      "a round trip failed");
}
BENCHMARK(TinySyncVsFutexInterleaved)->UseRealTime();

// The data path's futex calls (the doorbell's wake, a leading waiter's sleep) through io_uring
// against the plain system calls (the path before io_uring, and the fallback on kernels before
// 6.7), in alternating blocks in one process: ratio is io_uring over system calls.
void TinySyncIoUringVsSyscalls(benchmark::State& state) {
  if (!qaic::driver::ioUringHasFutexOps()) return state.SkipWithError("this kernel has no io_uring futex operations");
  auto set = InferenceSet::Factory(session->context, compileRelu("tiny-uring", 16), 0, 1, 1);
  std::vector<float> x(16, -1.0f), y(16);
  uint64_t id = 0;
  auto block = [&](bool syscalls) {
    return [&, syscalls] {
      qaic::driver::forceFutexSyscalls(syscalls);
      inferOnce(*set, {heap(x), heap(y)}, ++id, state);
      return !state.error_occurred();
    };
  };
  qaic::bench::compareInAlternatingBlocks(state, 32, "syscalls", block(true), "io_uring", block(false),
                                          "a round trip failed");
  qaic::driver::forceFutexSyscalls(false);
}
BENCHMARK(TinySyncIoUringVsSyscalls)->UseRealTime();

// An activated set with nothing to do: what the emulator's threads cost while idle (the channel
// sleeps on the doorbell in both modes once the polling window after the last request passed).
void IdleEmulatorCpu(benchmark::State& state) {
  auto set = InferenceSet::Factory(session->context, compileRelu("idle", 16), 0, 1, 1);
  std::vector<float> x(16, -1.0f), y(16);
  inferOnce(*set, {heap(x), heap(y)}, 1, state);  // the channel has run, and polls if it may
  constexpr auto kSpan = std::chrono::seconds(10);
  for (auto _ : state) {
    const double before = qaic::testing::sampleUsage(session->emulator->pid()).cpuSeconds;
    std::this_thread::sleep_for(kSpan);
    const double after = qaic::testing::sampleUsage(session->emulator->pid()).cpuSeconds;
    if (before < 0 || after < 0) return state.SkipWithError("cannot read the emulator's /proc/<pid>/stat");
    state.counters["cpu_percent"] = 100.0 * (after - before) / static_cast<double>(kSpan.count());
  }
}
BENCHMARK(IdleEmulatorCpu)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);

// utime + stime of every thread of this process, in microseconds' resolution.
double processCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::shared_ptr<InferenceSet> throughputSet;
std::once_flag throughputOnce;

void Throughput(benchmark::State& state) {
  std::call_once(throughputOnce, [] {
    throughputSet = InferenceSet::Factory(session->context, compileRelu("throughput", 1024), 0, 10, 1);
  });
  std::vector<float> x(1024, 0.5f), y(1024);
  uint64_t id = static_cast<uint64_t>(state.thread_index()) << 40;
  // CPU per inference, both processes (this one: every thread, the runtime's included). Every
  // thread runs the same number of iterations, and the loop ends with all threads at a barrier.
  const bool first = state.thread_index() == 0;
  const double clientBefore = first ? processCpuSeconds() : 0;
  const double emulatorBefore = first ? qaic::testing::sampleUsage(session->emulator->pid()).cpuSeconds : 0;
  for (auto _ : state) inferOnce(*throughputSet, {heap(x), heap(y)}, ++id, state);
  state.SetItemsProcessed(state.iterations());
  if (first) {
    const double inferences = static_cast<double>(state.iterations()) * state.threads();
    const double emulatorAfter = qaic::testing::sampleUsage(session->emulator->pid()).cpuSeconds;
    state.counters["client_cpu_us"] = (processCpuSeconds() - clientBefore) * 1e6 / inferences;
    if (emulatorBefore >= 0 && emulatorAfter >= 0)
      state.counters["emulator_cpu_us"] = (emulatorAfter - emulatorBefore) * 1e6 / inferences;
  }
}
BENCHMARK(Throughput)->Threads(4)->UseRealTime();

// Requests past the inline limit (64 K floats each way) on 8 activations from 4 threads: every
// conversion runs on the pipeline threads (the context's pool), so this is their throughput.
std::shared_ptr<InferenceSet> pipelineSet;
std::once_flag pipelineOnce;

void PipelineThroughput(benchmark::State& state) {
  std::call_once(pipelineOnce, [] {
    pipelineSet = InferenceSet::Factory(session->context, compileRelu("pipeline-throughput", 65536), 0, 2, 8);
  });
  std::vector<float> x(65536, 0.5f), y(65536);
  uint64_t id = static_cast<uint64_t>(state.thread_index()) << 40;
  for (auto _ : state) inferOnce(*pipelineSet, {heap(x), heap(y)}, ++id, state);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * int64_t{2 * 65536 * sizeof(float)});
}
BENCHMARK(PipelineThroughput)->Threads(4)->UseRealTime();

constexpr std::size_t k64MiB = 64u << 20;

void Dma64MiB(benchmark::State& state) {
  auto set = InferenceSet::Factory(session->context, compileRelu("dma64", k64MiB / sizeof(float)), 0, 1, 1);
  auto in = set->allocateDmaBuffer(k64MiB);
  auto out = set->allocateDmaBuffer(k64MiB);
  std::memset(in->data(), 0, k64MiB);
  uint64_t id = 0;
  for (auto _ : state) inferOnce(*set, {in->qbuffer(), out->qbuffer()}, ++id, state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * k64MiB));
}
BENCHMARK(Dma64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same with heap buffers: the runtime copies into its staging buffer objects and back.
void Heap64MiB(benchmark::State& state) {
  auto set = InferenceSet::Factory(session->context, compileRelu("heap64", k64MiB / sizeof(float)), 0, 1, 1);
  std::vector<uint8_t> in(k64MiB, 0), out(k64MiB);
  auto heap = [](std::vector<uint8_t>& bytes) {
    QBuffer b;
    b.type = QBUFFER_TYPE_HEAP;
    b.buf = bytes.data();
    b.size = bytes.size();
    return b;
  };
  uint64_t id = 0;
  for (auto _ : state) inferOnce(*set, {heap(in), heap(out)}, ++id, state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * k64MiB));
}
BENCHMARK(Heap64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

void Memcpy64MiBBaseline(benchmark::State& state) {
  std::vector<uint8_t> user(k64MiB, 1), device(k64MiB), back(k64MiB);
  for (auto _ : state) {
    std::memcpy(device.data(), user.data(), k64MiB);
    std::memcpy(back.data(), device.data(), k64MiB);
    benchmark::DoNotOptimize(back.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * k64MiB));
}
BENCHMARK(Memcpy64MiBBaseline)->UseRealTime()->Unit(benchmark::kMillisecond);

// Submits one inference on `set` and returns its handle (nullptr after reporting an error).
shInferenceHandle submitOnce(InferenceSet& set, const std::vector<QBuffer>& buffers, uint64_t id,
                             benchmark::State& state) {
  shInferenceHandle h;
  if (set.getAvailable(h, 10'000'000) != QS_SUCCESS) {
    state.SkipWithError("getAvailable timed out");
    return nullptr;
  }
  h->setBuffers(buffers);
  set.submit(h, id);
  return h;
}

// Waits for inference `id` of `set`; adds its transfer counts; false after reporting an error.
bool finishOnce(InferenceSet& set, uint64_t id, TransferCounts& total, benchmark::State& state) {
  shInferenceHandle done;
  const QStatus status = set.getCompletedId(done, id, 30'000'000);
  if (done) {
    const TransferCounts counts = done->getTransferCounts();
    total.hostCopiedBytes += counts.hostCopiedBytes;
    total.inPlaceBytes += counts.inPlaceBytes;
    set.putCompleted(done);
  }
  if (status != QS_SUCCESS) state.SkipWithError("inference failed");
  return status == QS_SUCCESS;
}

// The input lives once, in a DMA buffer of device 0; device 1's set gets its dma-buf descriptor
// (QBUFFER_TYPE_DMABUF, imported with PRIME) and reads the same memory. Both inferences are in
// flight together. Each device writes its own 64 MiB output DMA buffer.
void SharedInput64MiBTwoDevices(benchmark::State& state) {
  auto qpc = compileRelu("shared64", k64MiB / sizeof(float));
  auto first = InferenceSet::Factory(session->context, qpc, 0, 1, 1);
  auto second = InferenceSet::Factory(session->context, qpc, 1, 1, 1);
  auto input = first->allocateDmaBuffer(k64MiB);
  auto firstOut = first->allocateDmaBuffer(k64MiB);
  auto secondOut = second->allocateDmaBuffer(k64MiB);
  std::memset(input->data(), 0, k64MiB);
  QBuffer shared;
  shared.type = QBUFFER_TYPE_DMABUF;
  shared.handle = input->fd();
  shared.size = k64MiB;
  shared.buf = input->data();
  TransferCounts total;
  uint64_t id = 0, inferences = 0;
  for (auto _ : state) {
    ++id;
    auto a = submitOnce(*first, {input->qbuffer(), firstOut->qbuffer()}, id, state);
    auto b = a ? submitOnce(*second, {shared, secondOut->qbuffer()}, id, state) : nullptr;
    if (!a || !b || !finishOnce(*first, id, total, state) || !finishOnce(*second, id, total, state)) break;
    inferences += 2;
  }
  if (inferences == 0) return;
  state.counters["host_copied_bytes_per_inference"] = static_cast<double>(total.hostCopiedBytes) /
                                                      static_cast<double>(inferences);
  state.counters["in_place_bytes_per_inference"] = static_cast<double>(total.inPlaceBytes) /
                                                   static_cast<double>(inferences);
  state.SetItemsProcessed(static_cast<int64_t>(inferences));
}
BENCHMARK(SharedInput64MiBTwoDevices)->UseRealTime()->Unit(benchmark::kMillisecond);

void Memcpy64MiBOnceBaseline(benchmark::State& state) {
  std::vector<uint8_t> from(k64MiB, 1), to(k64MiB);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), k64MiB);
    benchmark::DoNotOptimize(to.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * k64MiB));
}
BENCHMARK(Memcpy64MiBOnceBaseline)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (std::getenv("QAIC_BUILD_DIR") == nullptr) {
    // bin/qaic_runtime_bench -> the build directory, where EmulatorProcess finds bin/qaic-emu.
    const fs::path self = fs::read_symlink("/proc/self/exe");
    ::setenv("QAIC_BUILD_DIR", self.parent_path().parent_path().c_str(), 1);
  }
  Session s;
  session = &s;
  int rc = 0;
  try {
    // Two default devices: SharedInput64MiBTwoDevices shares a buffer between them.
    const char* polling = std::getenv("QAIC_BENCH_DATAPATH_POLLING");
    const char* interval = std::getenv("QAIC_BENCH_POLL_INTERVAL_US");
    std::string parameters;
    if (polling != nullptr && std::string(polling) == "1") parameters = R"("datapath_polling": true)";
    if (interval != nullptr && *interval != '\0')
      parameters += (parameters.empty() ? "" : ", ") + std::string(R"("datapath_poll_interval_us": )") +
                    std::to_string(std::stoul(interval));
    s.emulator = std::make_unique<qaic::testing::EmulatorProcess>(R"({"devices": [{}, {}], "module_parameters": {)" +
                                                                  parameters + "}}");
    ::setenv("QAIC_ROOT", s.emulator->rootPath().c_str(), 1);
    s.work = std::make_unique<qaic::testing::TempDir>("qaic-runtime-bench");
    QAicContextProperties properties;
    properties.initialLogLevel = QL_ERROR;
    s.context = Context::Factory(&properties, {});
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qaic_runtime_bench: %s\n", e.what());
    rc = 1;
  }
  throughputSet.reset();
  pipelineSet.reset();
  s.context.reset();
  if (s.emulator) s.emulator->stop();
  s.work.reset();
  benchmark::Shutdown();
  return rc;
}
