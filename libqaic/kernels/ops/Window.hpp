// SPDX-License-Identifier: Apache-2.0
// The sliding window of the convolution, transposed convolution and pooling kernels, in oneDNN's
// terms. One reader per way the IR states a window, so the three kernel families agree on it.
#pragma once

#include <dnnl.hpp>

#include "ir/Graph.hpp"
#include "ir/Window2d.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

// Over k spatial dims; dilation 0 means none (oneDNN's convention, the IR's minus one).
struct NdWindow {
  dnnl::memory::dims kernel, stride, dilation, padBegin, padEnd;
};

// The N-D ops (conv, deconv, pool): size, stride and dilation hold k values, pads all k begins
// and then all k ends. Their shape rules check the lengths; a kernel built without them still
// gets an error, not a read past a vector.
inline NdWindow ndWindow(const ir::Op& op) {
  NdWindow w{op.integers("size"), op.integers("stride"), op.integers("dilation"), {}, {}};
  const auto pads = op.integers("pads");
  const std::size_t k = w.kernel.size();
  if (w.stride.size() != k || w.dilation.size() != k || pads.size() != 2 * k) {
    throwKernelError(op, "params 'stride' and 'dilation' must have as many values as 'size', 'pads' twice as many");
  }
  for (int64_t& d : w.dilation) d -= 1;
  const auto split = pads.begin() + static_cast<std::ptrdiff_t>(k);
  w.padBegin.assign(pads.begin(), split);
  w.padEnd.assign(split, pads.end());
  return w;
}

// The 2-D ops (conv2d, deconv2d, maxpool2d, avgpool2d): the geometry after autopad.
inline NdWindow ndWindow(const ir::Window2d& w) {
  return {{w.kernelH, w.kernelW},
          {w.strideH, w.strideW},
          {w.dilationH - 1, w.dilationW - 1},
          {w.padTop, w.padLeft},
          {w.padBottom, w.padRight}};
}

}  // namespace qaic::kernels::ops
