// The DBC data path without FUSE (NoOpRing: one no-op request, doorbell to completion) against
// a cross-process futex round trip (FutexPingPong) measured in the same run; goal: at most 2x.
// On a shared machine the separate numbers drift with the load, so BM_RingVsFutexInterleaved
// alternates the two and reports the ratio of their medians (what `make bench` prints).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "FutexPingPong.hpp"
#include "Median.hpp"
#include "NoOpRing.hpp"

namespace qaic::emu::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using qaic::bench::FutexPingPong;

void BM_Baseline_FutexRoundTrip(benchmark::State& state) {
  FutexPingPong pingPong;
  if (!pingPong.ok()) return state.SkipWithError("could not start the futex responder");
  for (auto _ : state)
    if (!pingPong.roundTrip(5000ms)) return state.SkipWithError("no pong within 5 s");
}
BENCHMARK(BM_Baseline_FutexRoundTrip)->UseRealTime();

void BM_RingNoOpRequest(benchmark::State& state) {
  NoOpRing ring;
  if (!ring.error().empty()) return state.SkipWithError(ring.error().c_str());
  for (auto _ : state)
    if (!ring.roundTrip(5000ms)) return state.SkipWithError(ring.error().c_str());
}
BENCHMARK(BM_RingNoOpRequest)->UseRealTime();

// Each iteration: one futex round trip, then one ring round trip, each timed on its own.
void BM_RingVsFutexInterleaved(benchmark::State& state) {
  FutexPingPong pingPong;
  if (!pingPong.ok()) return state.SkipWithError("could not start the futex responder");
  NoOpRing ring;
  if (!ring.error().empty()) return state.SkipWithError(ring.error().c_str());
  std::vector<double> futexNs, ringNs;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    if (!pingPong.roundTrip(5000ms)) return state.SkipWithError("no pong within 5 s");
    const auto t1 = Clock::now();
    if (!ring.roundTrip(5000ms)) return state.SkipWithError(ring.error().c_str());
    const auto t2 = Clock::now();
    futexNs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    ringNs.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count());
  }
  const double futex = qaic::bench::medianOf(futexNs), ringMedian = qaic::bench::medianOf(ringNs);
  state.counters["futex_median_ns"] = futex;
  state.counters["ring_median_ns"] = ringMedian;
  state.counters["ratio"] = futex > 0 ? ringMedian / futex : 0;
}
BENCHMARK(BM_RingVsFutexInterleaved)->UseRealTime();

}  // namespace
}  // namespace qaic::emu::bench
