// SPDX-License-Identifier: Apache-2.0
// A round trip against its baseline on a machine whose state moves under both. Timing the two
// call by call, alternately, puts the baseline in the wake of the measured operation: in a VM
// a futex round trip right after an inference finds both vCPUs awake (5 us) where on its own it
// pays for waking halted ones (40 us). So each benchmark iteration times a block of baseline
// calls, then a block of measured calls, each block long enough to settle into its own steady
// state, and the medians of the per-call block means are compared: a burst of load still falls
// on both sides alike.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "Median.hpp"

namespace qaic::bench {

// Sets counters `<baselineName>_median_ns`, `<measuredName>_median_ns` and `ratio` (measured over
// baseline). A call returning false ends the benchmark with `error`.
template <typename Baseline, typename Measured>
void compareInAlternatingBlocks(benchmark::State& state, int callsPerBlock, const std::string& baselineName,
                                Baseline baseline, const std::string& measuredName, Measured measured,
                                const char* error) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> baselineNs, measuredNs;
  auto block = [&](auto& call, std::vector<double>& means) {
    const auto start = Clock::now();
    for (int i = 0; i < callsPerBlock; ++i)
      if (!call()) return false;
    means.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / callsPerBlock);
    return true;
  };
  for (auto _ : state) {
    if (!block(baseline, baselineNs) || !block(measured, measuredNs)) return state.SkipWithError(error);
  }
  const double base = medianOf(baselineNs), ours = medianOf(measuredNs);
  state.counters[baselineName + "_median_ns"] = base;
  state.counters[measuredName + "_median_ns"] = ours;
  state.counters["ratio"] = base > 0 ? ours / base : 0;
}

}  // namespace qaic::bench
