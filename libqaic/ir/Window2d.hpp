// SPDX-License-Identifier: Apache-2.0
// The sliding-window geometry of conv2d, deconv2d and the 2-D pools: effective padding after
// `autopad`, and the output size. Shape inference and the executor both use it so they agree.
#pragma once

#include <cstdint>

#include "ir/Graph.hpp"

namespace qaic::ir {

struct Window2d {
  int64_t kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;  // after autopad
  int64_t outputPadH = 0, outputPadW = 0;                        // deconv2d only
  int64_t outH = 0, outW = 0;
};

// conv2d (with dilation), maxpool2d / avgpool2d (dilation 1): reads size, stride, padding,
// dilation (conv2d only) and autopad from `op`. Throws IrError when the output is empty.
Window2d forwardWindow(const Op& op, int64_t inH, int64_t inW);
// deconv2d: out = stride*(in-1) + output_padding + ((k-1)*d+1) - (pad_begin + pad_end).
Window2d deconvWindow(const Op& op, int64_t inH, int64_t inW);

}  // namespace qaic::ir
