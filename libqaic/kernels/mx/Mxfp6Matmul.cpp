// SPDX-License-Identifier: Apache-2.0
#include "kernels/mx/Mxfp6Matmul.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "kernels/format/DwhcTilesAvx512.hpp"
#include "kernels/format/VectorFormat.hpp"
#include "kernels/mx/Mxfp6Kernels.hpp"

namespace qaic::kernels::mx {
namespace {

const std::array<float, 256>& scaleTable() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) t[code] = scaleValue(static_cast<uint8_t>(code));
    return t;
  }();
  return table;
}

const std::array<float, 32>& magnitudes(ElementFormat format) {
  static const std::array<float, 32> e2m3 = magnitudeTable(ElementFormat::E2M3);
  static const std::array<float, 32> e3m2 = magnitudeTable(ElementFormat::E3M2);
  return format == ElementFormat::E2M3 ? e2m3 : e3m2;
}

// The reference loop: the same products and the same block-by-block dequantization, no vectors.
void scalarColumns(const detail::MxJob& job, int64_t n0, int64_t n1) {
  const int64_t k = job.k, blocks = blocksPerColumn(k);
  std::vector<float> column(static_cast<std::size_t>(k));
  for (int64_t n = n0; n < n1; ++n) {
    const std::byte* base = job.weights + n * columnBytes(k);
    for (int64_t b = 0; b < blocks; ++b) {
      const float scale = job.scales[std::to_integer<uint8_t>(base[blocks * kBlockBytes + b])];
      for (int64_t i = 0; i < kBlockElements && b * kBlockElements + i < k; ++i) {
        const std::byte* group = base + b * kBlockBytes + 3 * (i / 4);
        const uint32_t word = std::to_integer<uint32_t>(group[0]) | std::to_integer<uint32_t>(group[1]) << 8 |
                              std::to_integer<uint32_t>(group[2]) << 16;
        const uint32_t code = (word >> (6 * (i % 4))) & 63;
        const float magnitude = job.magnitudes[code & 31];
        column[b * kBlockElements + i] = ((code & 32) ? -magnitude : magnitude) * scale;
      }
    }
    for (int64_t r = 0; r < job.m; ++r) {
      float sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += job.x[r * k + i] * column[i];
      job.y[r * job.n + n] = job.alpha * sum;
    }
  }
}

MxPath resolve(MxPath path) {
  if (path == MxPath::Avx512 && !mxAvx512Available())
    throw MxFormatError("the AVX-512 MX kernels need a CPU with AVX-512 F, BW, VL and DQ");
  if (path == MxPath::Avx2 && !mxAvx2Available()) throw MxFormatError("the AVX2 MX kernels need AVX2 and FMA");
  if (path == MxPath::Avx512Vbmi && !mxAvx512VbmiAvailable())
    throw MxFormatError("the AVX-512 VBMI MX kernel needs a CPU with AVX-512 F, BW, VL, DQ and VBMI");
  if (path != MxPath::Auto) return path;
  if (mxAvx512VbmiAvailable()) return MxPath::Avx512Vbmi;
  if (mxAvx512Available()) return MxPath::Avx512;
  return mxAvx2Available() ? MxPath::Avx2 : MxPath::Scalar;
}

void runColumns(const detail::MxJob& job, MxPath path, int64_t n0, int64_t n1) {
  if (path == MxPath::Scalar) return scalarColumns(job, n0, n1);
  if (job.m <= kGemvMaxRows) {
    if (path == MxPath::Avx512Vbmi) return detail::gemvAvx512Vbmi(job, n0, n1);
    return path == MxPath::Avx512 ? detail::gemvAvx512(job, n0, n1) : detail::gemvAvx2(job, n0, n1);
  }
  // One panel per thread, reused by every product that thread runs: bounded by K, not by N.
  thread_local std::vector<float> panel;
  panel.resize(static_cast<std::size_t>(kPanelColumns * blocksPerColumn(job.k) * kBlockElements));
  if (path == MxPath::Avx512 || path == MxPath::Avx512Vbmi) return detail::panelAvx512(job, n0, n1, panel.data());
  detail::panelAvx2(job, n0, n1, panel.data());
}

}  // namespace

bool mxAvx2Available() {
  static const bool has = format::cpuHasF16cAvx2() && __builtin_cpu_supports("fma");
  return has;
}

bool mxAvx512Available() { return format::cpuHasAvx512(); }

bool mxAvx512VbmiAvailable() {
  static const bool has = format::cpuHasAvx512() && __builtin_cpu_supports("avx512vbmi");
  return has;
}

void mxfp6Matmul(const Mxfp6Matrix& w, const float* x, int64_t m, float* y, float alpha, int threads, MxPath path) {
  if (w.k <= 0 || w.n <= 0 || m < 0) throw MxFormatError("MXFP6 matmul of an empty shape");
  if (w.bytes.size() != encodedBytes(w.k, w.n)) {
    throw MxFormatError("MXFP6 weight holds " + std::to_string(w.bytes.size()) + " bytes, [" + std::to_string(w.k) +
                        ", " + std::to_string(w.n) + "] needs " + std::to_string(encodedBytes(w.k, w.n)));
  }
  if (m == 0) return;
  const MxPath chosen = resolve(path);
  detail::MxJob job{w.bytes.data(), w.k, w.n, magnitudes(w.format).data(), scaleTable().data(), x, m, y, alpha};
  if (chosen == MxPath::Avx512Vbmi && m <= kGemvMaxRows) {
    // Reordered once here, read by every thread: the calling thread's buffer, reused.
    thread_local std::vector<float> reordered;
    reordered.resize(static_cast<std::size_t>(m * detail::vbmiStride(w.k)));
    detail::reorderForVbmi(x, m, w.k, reordered.data());
    job.xReordered = reordered.data();
  }
  // Columns split evenly: every column costs the same. Small products stay on one thread.
  const int64_t work = m * w.k * w.n;
  const int parts = static_cast<int>(std::min<int64_t>(std::max(threads, 1), work < (1 << 16) ? 1 : w.n));
  if (parts == 1) return runColumns(job, chosen, 0, w.n);
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int t = 0; t < parts; ++t) runColumns(job, chosen, w.n * t / parts, w.n * (t + 1) / parts);
}

}  // namespace qaic::kernels::mx
