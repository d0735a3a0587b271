// SPDX-License-Identifier: Apache-2.0
#include "ir/Window2d.hpp"

#include "ir/OpError.hpp"

namespace qaic::ir {
namespace {

struct Axis {
  int64_t in, kernel, stride, dilation, padBegin, padEnd, outputPad;
};

int64_t effectiveKernel(const Op& op, const Axis& a) {
  return checkedAdd(op, "dilation", checkedMul(op, "dilation", a.kernel - 1, a.dilation), 1);
}

// SAME_*: out = ceil(in/stride); the total padding is split with floor(total/2) first for
// SAME_UPPER and last for SAME_LOWER.
void applySame(Axis& a, int64_t total, bool upper) {
  if (total < 0) total = 0;
  const int64_t half = total / 2;
  a.padBegin = upper ? half : total - half;
  a.padEnd = total - a.padBegin;
}

void resolveForward(const Op& op, const std::string& autopad, Axis& a) {
  if (autopad == "VALID") {
    a.padBegin = a.padEnd = 0;
  } else if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    const int64_t out = (a.in + a.stride - 1) / a.stride;
    const int64_t span = checkedMul(op, "stride", out - 1, a.stride);
    applySame(a, span + effectiveKernel(op, a) - a.in, autopad == "SAME_UPPER");
  }
}

int64_t forwardOut(const Op& op, const Axis& a, const char* axisName) {
  const int64_t padded = checkedAdd(op, "padding", checkedAdd(op, "padding", a.in, a.padBegin), a.padEnd);
  const int64_t reach = padded - effectiveKernel(op, a);
  if (reach < 0) {
    throwParamError(op, "size",
                    std::string("window (") + std::to_string(effectiveKernel(op, a)) + ") larger than padded " +
                        axisName + " (" + std::to_string(padded) + ")");
  }
  return reach / a.stride + 1;
}

Window2d assemble(const Axis& h, const Axis& w) {
  Window2d win;
  win.kernelH = h.kernel;
  win.kernelW = w.kernel;
  win.strideH = h.stride;
  win.strideW = w.stride;
  win.dilationH = h.dilation;
  win.dilationW = w.dilation;
  win.padTop = h.padBegin;
  win.padBottom = h.padEnd;
  win.padLeft = w.padBegin;
  win.padRight = w.padEnd;
  win.outputPadH = h.outputPad;
  win.outputPadW = w.outputPad;
  return win;
}

void readAxes(const Op& op, int64_t inH, int64_t inW, bool hasDilation, Axis& h, Axis& w) {
  const auto size = op.integers("size");
  const auto stride = op.integers("stride");
  const auto padding = op.integers("padding");
  std::vector<int64_t> dilation{1, 1};
  if (hasDilation) dilation = op.integers("dilation");
  h = Axis{inH, size[0], stride[0], dilation[0], padding[0], padding[2], 0};
  w = Axis{inW, size[1], stride[1], dilation[1], padding[1], padding[3], 0};
}

}  // namespace

Window2d forwardWindow(const Op& op, int64_t inH, int64_t inW) {
  Axis h{}, w{};
  readAxes(op, inH, inW, op.optype == "conv2d", h, w);
  const std::string& autopad = op.string("autopad");
  resolveForward(op, autopad, h);
  resolveForward(op, autopad, w);
  Window2d win = assemble(h, w);
  win.outH = forwardOut(op, h, "height");
  win.outW = forwardOut(op, w, "width");
  return win;
}

Window2d deconvWindow(const Op& op, int64_t inH, int64_t inW) {
  Axis h{}, w{};
  readAxes(op, inH, inW, true, h, w);
  const auto outputPadding = op.integers("output_padding");
  h.outputPad = outputPadding[0];
  w.outputPad = outputPadding[1];
  const std::string& autopad = op.string("autopad");
  for (Axis* a : {&h, &w}) {
    if (autopad == "VALID") {
      a->padBegin = a->padEnd = 0;
    } else if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
      // SAME for a transposed convolution: out = in * stride.
      const int64_t full = checkedAdd(op, "stride", checkedMul(op, "stride", a->stride, a->in - 1),
                                      checkedAdd(op, "output_padding", a->outputPad, effectiveKernel(op, *a)));
      applySame(*a, full - checkedMul(op, "stride", a->in, a->stride), autopad == "SAME_UPPER");
    }
  }
  Window2d win = assemble(h, w);
  int64_t* outs[2] = {&win.outH, &win.outW};
  const Axis* axes[2] = {&h, &w};
  for (int i = 0; i < 2; ++i) {
    const Axis& a = *axes[i];
    const int64_t full = checkedAdd(op, "stride", checkedMul(op, "stride", a.stride, a.in - 1),
                                    checkedAdd(op, "output_padding", a.outputPad, effectiveKernel(op, a)));
    *outs[i] = full - a.padBegin - a.padEnd;
    if (*outs[i] < 1) {
      throwParamError(op, "padding",
                      std::string("output ") + (i == 0 ? "height" : "width") + " " + std::to_string(*outs[i]) + " < 1");
    }
  }
  return win;
}

}  // namespace qaic::ir
