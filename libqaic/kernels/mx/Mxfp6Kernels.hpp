// SPDX-License-Identifier: Apache-2.0
// The per-instruction-set MX kernels behind mxfp6Matmul (Mxfp6Matmul.cpp dispatches): each
// computes the output columns [n0, n1) of one product. Declarations and a plain struct only:
// every vector helper stays inside its own file (internal linkage), as in kernels/format.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qaic::kernels::mx::detail {

struct MxJob {
  const std::byte* weights = nullptr;  // the whole encoded W
  int64_t k = 0, n = 0;
  const float* magnitudes = nullptr;  // 32 entries: codes 0..31
  const float* scales = nullptr;      // 256 entries: the value of each E8M0 code
  const float* x = nullptr;
  int64_t m = 0;
  float* y = nullptr;
  float alpha = 1.0f;
  const float* xReordered = nullptr;  // the VBMI path's x (reorderForVbmi), else unused
};

// m <= kGemvMaxRows.
void gemvAvx512(const MxJob& job, int64_t n0, int64_t n1);
void gemvAvx2(const MxJob& job, int64_t n0, int64_t n1);
// The VBMI path (m <= kGemvMaxRows): job.xReordered holds reorderForVbmi(x): per row,
// vbmiStride(k) floats (zeros past k), each block's even elements before its odd ones.
int64_t vbmiStride(int64_t k);
void reorderForVbmi(const float* x, int64_t m, int64_t k, float* reordered);
void gemvAvx512Vbmi(const MxJob& job, int64_t n0, int64_t n1);
// Any m; `panel` holds kPanelColumns * blocksPerColumn(k) * 32 floats.
void panelAvx512(const MxJob& job, int64_t n0, int64_t n1, float* panel);
void panelAvx2(const MxJob& job, int64_t n0, int64_t n1, float* panel);

}  // namespace qaic::kernels::mx::detail
