// SPDX-License-Identifier: Apache-2.0
// Keys' cubic convolution weights of the four cells around a coordinate (floor - 1 .. floor + 2),
// r its fraction; shared by interpolate (ONNX Resize) and grid_sample so both weigh alike.
#pragma once

#include <array>

namespace qaic::kernels::ops {

inline std::array<double, 4> cubicWeights(double r, double a) {
  const auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < d < 2
  const auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // d <= 1
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

}  // namespace qaic::kernels::ops
