// libqaic data-path benchmarks against a real qaic-emu, each with its same-run baseline:
//   TinySyncRoundTrip        one relu over 16 floats: getAvailable, submit, getCompletedId, put
//   FutexRoundTripBaseline   a cross-process futex ping-pong (the floor of any device round trip)
//   TinySyncVsFutexInterleaved  the two in alternating blocks, medians compared (the goal's ratio)
//   Throughput/threads:4     4 application threads sharing a set of setSize 10
//   Dma64MiB                 a 64 MiB input and output in DMA buffers through one inference
//   Memcpy64MiBBaseline      copying 64 MiB in and 64 MiB out
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>

#include <qaic/qaic.hpp>

#include "EmulatorProcess.hpp"
#include "FutexPingPong.hpp"
#include "AlternatingBlocks.hpp"
#include "Process.hpp"
#include "TempDir.hpp"

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
                       R"({"name":"x","tensor":"x","direction":"in","dtype":"TL_FLOAT","dims":)" + dims + "},"
                       R"({"name":"y","tensor":"y","direction":"out","dtype":"TL_FLOAT","dims":)" + dims + "}]}";
  const fs::path out = *session->work / (name + "-qpc");
  const auto status = qaic::testing::runProgram(
      {qaic::testing::programPath("qaic-exec").string(), "-m=" + ir.string(), "-aic-binary-dir=" + out.string()},
      *session->work / "exec.log", std::chrono::seconds(120));
  if (!status.exited || status.code != 0) throw std::runtime_error("qaic-exec failed on " + name);
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

std::shared_ptr<InferenceSet> throughputSet;
std::once_flag throughputOnce;

void Throughput(benchmark::State& state) {
  std::call_once(throughputOnce, [] {
    throughputSet = InferenceSet::Factory(session->context, compileRelu("throughput", 1024), 0, 10, 1);
  });
  std::vector<float> x(1024, 0.5f), y(1024);
  uint64_t id = static_cast<uint64_t>(state.thread_index()) << 40;
  for (auto _ : state) inferOnce(*throughputSet, {heap(x), heap(y)}, ++id, state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Throughput)->Threads(4)->UseRealTime();

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
    s.emulator = std::make_unique<qaic::testing::EmulatorProcess>();
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
  s.context.reset();
  if (s.emulator) s.emulator->stop();
  s.work.reset();
  benchmark::Shutdown();
  return rc;
}
