// SPDX-License-Identifier: Apache-2.0
// The shapes of bench_device_format's product rows, {N, C, H, W}: single images (cache-resident,
// where memcpy runs at cache speed), a batch that fits the last-level cache, and ones far larger
// than it (both sides bound by DRAM). The ceiling rows take the same shapes.
#pragma once

#include <benchmark/benchmark.h>

namespace qaic::bench {

inline void deviceFormatShapes(benchmark::internal::Benchmark* b) {
  b->Args({1, 3, 224, 224})->Args({1, 8, 112, 112})->Args({1, 20, 56, 56});
  b->Args({32, 3, 224, 224})->Args({64, 8, 112, 112})->Args({128, 3, 224, 224});
}

}  // namespace qaic::bench
