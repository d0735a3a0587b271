// SPDX-License-Identifier: Apache-2.0
// The one definition of which user element lands at which device element: every conversion
// path (scalar, vectorized, tests' references aside) is checked against this walk.
#pragma once

#include <cstdint>

#include "kernels/format/DeviceFormat.hpp"

namespace qaic::kernels::format {

// Calls visit(deviceIndex, userIndex) for every element, device indices ascending.
template <typename Visit>
void walkElements(const DeviceGeometry& g, ir::DeviceLayout layout, ir::UserLayout userLayout, Visit&& visit) {
  const int64_t D = g.depth, C = g.channels, H = g.height, W = g.width;
  const bool nhwc = userLayout == ir::UserLayout::NHWC;
  auto userIndex = [&](int64_t d, int64_t c, int64_t h, int64_t w) {
    return nhwc ? ((d * H + h) * W + w) * C + c : ((d * C + c) * H + h) * W + w;
  };
  int64_t device = 0;
  if (layout == ir::DeviceLayout::Flat) {
    if (!nhwc) {
      const int64_t total = D * C * H * W;
      for (int64_t i = 0; i < total; ++i) visit(i, i);
      return;
    }
    for (int64_t d = 0; d < D; ++d)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) visit(device++, userIndex(d, c, h, w));
    return;
  }
  const bool wMajor = layout == ir::DeviceLayout::DWHC;
  const int64_t outer = wMajor ? W : H;
  const int64_t inner = wMajor ? H : W;
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
      const int64_t chunk = C - c0 < 8 ? C - c0 : 8;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t h = wMajor ? i : o;
          const int64_t w = wMajor ? o : i;
          for (int64_t c = 0; c < chunk; ++c) visit(device++, userIndex(d, c0 + c, h, w));
        }
      }
    }
  }
}

}  // namespace qaic::kernels::format
