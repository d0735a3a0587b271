// SPDX-License-Identifier: Apache-2.0
// The DBC data path without FUSE (NoOpRing: one no-op request, doorbell to completion) against
// a cross-process futex round trip (FutexPingPong) measured in the same run; goal: at most 2x.
// On a shared machine the separate numbers drift with the load, so BM_RingVsFutexInterleaved
// alternates blocks of the two and reports the ratio of their medians (what `make bench` prints).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "AlternatingBlocks.hpp"
#include "FutexPingPong.hpp"
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

// Blocks of 64 futex round trips alternating with blocks of 64 round trips of `trip` on a ring.
void ringVsFutexInterleaved(benchmark::State& state, const char* measuredName,
                            bool (NoOpRing::*trip)(std::chrono::milliseconds)) {
  FutexPingPong pingPong;
  if (!pingPong.ok()) return state.SkipWithError("could not start the futex responder");
  NoOpRing ring;
  if (!ring.error().empty()) return state.SkipWithError(ring.error().c_str());
  qaic::bench::compareInAlternatingBlocks(
      state, 64, "futex", [&] { return pingPong.roundTrip(5000ms); }, measuredName,
      [&] { return (ring.*trip)(5000ms); }, "a round trip got no answer within 5 s");
}

void BM_RingVsFutexInterleaved(benchmark::State& state) { ringVsFutexInterleaved(state, "ring", &NoOpRing::roundTrip); }
BENCHMARK(BM_RingVsFutexInterleaved)->UseRealTime();

// The same with a program run in each request (NoOpRing::programRoundTrip).
void BM_ProgramRingVsFutexInterleaved(benchmark::State& state) {
  ringVsFutexInterleaved(state, "program_ring", &NoOpRing::programRoundTrip);
}
BENCHMARK(BM_ProgramRingVsFutexInterleaved)->UseRealTime();

}  // namespace
}  // namespace qaic::emu::bench
