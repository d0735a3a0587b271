// SPDX-License-Identifier: Apache-2.0
// The median of timed samples, for benchmarks that interleave a measurement with its baseline
// and compare the two medians (a burst of load on a shared machine then hits both alike).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace qaic::bench {

inline double medianOf(std::vector<double> samples) {
  if (samples.empty()) return 0;
  auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

}  // namespace qaic::bench
