// SPDX-License-Identifier: Apache-2.0
// Shape rules of the convolution, pooling, normalization and resizing operators.
#include <cmath>

#include "ir/ShapeRules.hpp"
#include "ir/Window2d.hpp"

namespace qaic::ir::rules {
namespace {

void requireKernelSize(const Op& op, const Dims& weight) {
  const auto size = op.integers("size");
  if (size[0] != weight[2] || size[1] != weight[3]) {
    throwParamError(
        op, "size",
        formatDims(size) + " != weight kernel [" + std::to_string(weight[2]) + "," + std::to_string(weight[3]) + "]");
  }
}

void requireBias(const Op& op, const TensorInfo& bias, const TensorInfo& src, int64_t outC) {
  requireSameDType(op, "bias", bias, src, "src");
  if (bias.dims != Dims{outC}) {
    throwInputError(op, "bias", "expected [" + std::to_string(outC) + "], got " + formatDims(bias.dims));
  }
}

// conv2d and deconv2d: src [N, C, H, W] and a rank-4 weight of src's dtype.
void requireConvOperands(const Op& op, const TensorInfo& src, const TensorInfo& weight) {
  requireRank(op, "src", src, 4);
  requireRank(op, "weight", weight, 4);
  requireSameDType(op, "weight", weight, src, "src");
}

// conv2d and conv: weight [O, C/group, ...] must split src's channels into `group` groups.
int64_t requireGroups(const Op& op, const TensorInfo& src, const TensorInfo& weight) {
  const int64_t group = op.integer("group");
  const int64_t channels = src.dims[1];
  const int64_t outC = weight.dims[0];
  if (checkedMul(op, "group", weight.dims[1], group) != channels) {
    throwParamError(op, "group",
                    "weight dims[1]*group (" + std::to_string(weight.dims[1] * group) + ") != src channels (" +
                        std::to_string(channels) + ")");
  }
  if (outC % group != 0) {
    throwParamError(op, "group",
                    "weight dims[0] (" + std::to_string(outC) + " output channels) is not divisible by group (" +
                        std::to_string(group) + ")");
  }
  return outC;
}

// deconv2d and deconv: weight [C, O/group, ...] takes src's C channels in `group` groups;
// returns O.
int64_t requireDeconvGroups(const Op& op, const TensorInfo& src, const TensorInfo& weight) {
  const int64_t group = op.integer("group");
  if (weight.dims[0] != src.dims[1]) {
    throwInputError(
        op, "weight",
        "dims[0] (" + std::to_string(weight.dims[0]) + ") != src channels (" + std::to_string(src.dims[1]) + ")");
  }
  if (src.dims[1] % group != 0) {
    throwParamError(op, "group",
                    "src channels (" + std::to_string(src.dims[1]) + ") are not divisible by group (" +
                        std::to_string(group) + ")");
  }
  return checkedMul(op, "group", weight.dims[1], group);
}

// conv and deconv: src [N, C, d1..dk] (k = 1..3) in float, a weight of src's rank and dtype
// whose kernel dims are `size`; returns k.
std::size_t requireNdOperands(const Op& op, const TensorInfo& src, const TensorInfo& weight) {
  if (src.dims.size() < 3 || src.dims.size() > 5) {
    throwInputError(op, "src", "expected [N, C, d1..dk] with k = 1..3, got " + formatDims(src.dims));
  }
  requireDType(op, "src", src, DType::Float);
  requireRank(op, "weight", weight, src.dims.size());
  requireSameDType(op, "weight", weight, src, "src");
  const auto size = op.integers("size");
  if (!std::equal(size.begin(), size.end(), weight.dims.begin() + 2, weight.dims.end())) {
    throwParamError(op, "size", formatDims(size) + " != the weight's kernel dims " + formatDims(weight.dims));
  }
  return src.dims.size() - 2;
}

}  // namespace

Outs shapeConv2d(const Op& op, Infos in) {
  const TensorInfo& src = in[0];
  const TensorInfo& weight = in[1];
  requireConvOperands(op, src, weight);
  const int64_t outC = requireGroups(op, src, weight);
  requireKernelSize(op, weight.dims);
  requireBias(op, in[2], src, outC);
  const Window2d win = forwardWindow(op, src.dims[2], src.dims[3]);
  return {TensorInfo{src.dtype, Dims{src.dims[0], outC, win.outH, win.outW}}};
}

Outs shapeDeconv2d(const Op& op, Infos in) {
  const TensorInfo& src = in[0];
  const TensorInfo& weight = in[1];
  requireConvOperands(op, src, weight);
  const int64_t outC = requireDeconvGroups(op, src, weight);
  requireKernelSize(op, weight.dims);
  requireBias(op, in[2], src, outC);
  const Window2d win = deconvWindow(op, src.dims[2], src.dims[3]);
  const Dims out{src.dims[0], outC, win.outH, win.outW};
  const auto requested = op.integers("output_dims");
  const bool used = requested[0] > 0 && requested[1] > 0 && requested[2] > 0 && requested[3] > 0;
  if (used && Dims(requested.begin(), requested.end()) != out) {
    throwParamError(op, "output_dims", formatDims(requested) + " != computed " + formatDims(out));
  }
  return {TensorInfo{src.dtype, out}};
}

Outs shapePool2d(const Op& op, Infos in) {
  requireRank(op, "src", in[0], 4);
  const Dims& src = in[0].dims;
  const Window2d win = forwardWindow(op, src[2], src[3]);
  return {TensorInfo{in[0].dtype, Dims{src[0], src[1], win.outH, win.outW}}};
}

Outs shapeGlobalAvgpool(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 3);
  TensorInfo out = in[0];
  for (std::size_t i = 2; i < out.dims.size(); ++i) out.dims[i] = 1;
  return {out};
}

Outs shapeBatchnorm(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 2);
  const int64_t channels = in[0].dims[1];
  const char* names[] = {"scale", "offset", "mean", "var"};
  for (std::size_t i = 0; i < 4; ++i) {
    requireSameDType(op, names[i], in[i + 1], in[0], "src");
    if (in[i + 1].dims != Dims{channels}) {
      throwInputError(op, names[i],
                      "expected [" + std::to_string(channels) + "] (src channels), got " + formatDims(in[i + 1].dims));
    }
  }
  return {in[0]};
}

Outs shapeUpsample(const Op& op, Infos in) {
  const auto scales = op.numbers("scales");
  TensorInfo out = in[0];
  for (std::size_t i = 0; i < out.dims.size(); ++i) {
    const double scaled = std::floor(scales[i] * static_cast<double>(out.dims[i]));
    if (!(scaled >= 1.0) || scaled > 9007199254740992.0) {
      throwParamError(op, "scales",
                      "axis " + std::to_string(i) + " scales to " + std::to_string(scaled) + " (must be >= 1)");
    }
    out.dims[i] = static_cast<int64_t>(scaled);
  }
  return {out};
}

Outs shapeResize(const Op& op, Infos in) {
  const auto dims = op.integers("dims");
  return {TensorInfo{in[0].dtype, Dims(dims.begin(), dims.end())}};
}

Outs shapeGridSample(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const Dims& grid = in[1].dims;
  if (src.size() < 3 || src.size() > 5) {
    throwInputError(op, "src", "expected [N, C, d1..dk] with k = 1..3, got " + formatDims(src));
  }
  const std::size_t spatial = src.size() - 2;
  // Nearest moves values and takes any dtype; linear and cubic weigh them.
  if (op.string("mode") != "nearest") requireFloating(op, "src", in[0]);
  requireFloating(op, "grid", in[1]);
  if (grid.size() != src.size() || grid[0] != src[0] || grid.back() != static_cast<int64_t>(spatial)) {
    throwInputError(op, "grid",
                    "expected [" + std::to_string(src[0]) + ", o1..o" + std::to_string(spatial) + ", " +
                        std::to_string(spatial) + "] for src " + formatDims(src) + ", got " + formatDims(grid));
  }
  if (op.string("mode") == "cubic" && spatial != 2) {
    throwParamError(op, "mode",
                    "cubic samples 2 spatial dims only, src " + formatDims(src) + " has " + std::to_string(spatial));
  }
  Dims out{src[0], src[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return {TensorInfo{in[0].dtype, out}};
}

}  // namespace qaic::ir::rules

namespace qaic::ir::rules {

Outs shapePoolNd(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  if (src.size() < 3 || src.size() > 5) {
    throwInputError(op, "src", "expected [N, C, d1..dk] with k = 1..3, got " + formatDims(src));
  }
  if (in[0].dtype != DType::UInt8 && in[0].dtype != DType::Int8) requireDType(op, "src", in[0], DType::Float);
  const std::size_t spatial = src.size() - 2;
  const auto size = op.integers("size");
  const auto stride = op.integers("stride");
  const auto dilation = op.integers("dilation");
  const auto pads = op.integers("pads");
  if (size.size() != spatial) {
    throwParamError(op, "size",
                    std::to_string(size.size()) + " values for " + std::to_string(spatial) + " spatial dims");
  }
  TensorInfo out = in[0];
  for (std::size_t d = 0; d < spatial; ++d) {
    const int64_t extent = checkedAdd(op, "dilation", checkedMul(op, "dilation", size[d] - 1, dilation[d]), 1);
    const int64_t padded = checkedAdd(op, "pads", checkedAdd(op, "pads", src[d + 2], pads[d]), pads[d + spatial]);
    if (padded < extent) {
      throwParamError(op, "size",
                      "window (" + std::to_string(extent) + ") larger than padded dim " + std::to_string(d) + " (" +
                          std::to_string(padded) + ")");
    }
    out.dims[d + 2] = (padded - extent) / stride[d] + 1;
  }
  return {out};
}

Outs shapeRoiAlign(const Op& op, Infos in) {
  const Dims& src = in[0].dims;
  const Dims& rois = in[1].dims;
  if (src.size() != 4) throwInputError(op, "src", "expected [N, C, H, W], got " + formatDims(src));
  requireFloating(op, "src", in[0]);
  if (rois.size() != 2 || rois[1] != 4) throwInputError(op, "rois", "expected [R, 4], got " + formatDims(rois));
  if (in[1].dtype != in[0].dtype) {
    throwInputError(
        op, "rois",
        "dtype " + std::string(dtypeName(in[1].dtype)) + " differs from src's " + std::string(dtypeName(in[0].dtype)));
  }
  requireIndices(op, "batch_indices", in[2]);
  if (in[2].dims != Dims{rois[0]}) {
    throwInputError(
        op, "batch_indices",
        "expected [" + std::to_string(rois[0]) + "] for rois " + formatDims(rois) + ", got " + formatDims(in[2].dims));
  }
  const auto outputDims = op.integers("output_dims");
  if (outputDims.size() != 2) throwParamError(op, "output_dims", "expected [height, width]");
  return {TensorInfo{in[0].dtype, Dims{rois[0], src[1], outputDims[0], outputDims[1]}}};
}

Outs shapePoolArgmax(const Op& op, Infos in) {
  Outs out = shapePoolNd(op, in);
  out[0].dtype = DType::Int64;
  return out;
}

// The N-D conv: src [N, C, d1..dk] (k = 1..3), weight [O, C/group, k1..kk], pads [begin...,
// end...].
Outs shapeConvNd(const Op& op, Infos in) {
  const TensorInfo& src = in[0];
  const TensorInfo& weight = in[1];
  const std::size_t spatial = requireNdOperands(op, src, weight);
  const int64_t outC = requireGroups(op, src, weight);
  requireBias(op, in[2], src, outC);
  const auto size = op.integers("size");
  const auto stride = op.integers("stride");
  const auto dilation = op.integers("dilation");
  const auto pads = op.integers("pads");
  Dims out{src.dims[0], outC};
  for (std::size_t d = 0; d < spatial; ++d) {
    const int64_t extent = checkedAdd(op, "dilation", checkedMul(op, "dilation", size[d] - 1, dilation[d]), 1);
    const int64_t padded = checkedAdd(op, "pads", checkedAdd(op, "pads", src.dims[d + 2], pads[d]), pads[d + spatial]);
    if (padded < extent) {
      throwParamError(op, "size",
                      "window (" + std::to_string(extent) + ") larger than padded dim " + std::to_string(d) + " (" +
                          std::to_string(padded) + ")");
    }
    out.push_back((padded - extent) / stride[d] + 1);
  }
  return {TensorInfo{src.dtype, out}};
}

// The N-D transposed conv: src [N, C, d1..dk] (k = 1..3), weight [C, O/group, k1..kk],
// out = stride * (in - 1) + output_padding + ((size - 1) * dilation + 1) - (begin + end).
Outs shapeDeconvNd(const Op& op, Infos in) {
  const TensorInfo& src = in[0];
  const TensorInfo& weight = in[1];
  const std::size_t spatial = requireNdOperands(op, src, weight);
  const int64_t outC = requireDeconvGroups(op, src, weight);
  requireBias(op, in[2], src, outC);
  const auto size = op.integers("size");
  const auto stride = op.integers("stride");
  const auto dilation = op.integers("dilation");
  const auto pads = op.integers("pads");
  const auto outputPadding = op.integers("output_padding");
  Dims out{src.dims[0], outC};
  for (std::size_t d = 0; d < spatial; ++d) {
    const int64_t extent = checkedAdd(op, "dilation", checkedMul(op, "dilation", size[d] - 1, dilation[d]), 1);
    const int64_t full = checkedAdd(op, "stride", checkedMul(op, "stride", stride[d], src.dims[d + 2] - 1),
                                    checkedAdd(op, "output_padding", outputPadding[d], extent));
    const int64_t cells = full - pads[d] - pads[d + spatial];
    if (cells < 1)
      throwParamError(op, "pads", "output dim " + std::to_string(d) + " would be " + std::to_string(cells));
    out.push_back(cells);
  }
  return {TensorInfo{src.dtype, out}};
}

}  // namespace qaic::ir::rules
