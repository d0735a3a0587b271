// SPDX-License-Identifier: Apache-2.0
// Conv (with batchnorm folding), MaxPool, AveragePool, GlobalAveragePool, BatchNormalization.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/OpError.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

namespace pb = ::onnx;

std::vector<int64_t> integersOr(const Converter& c, const std::string& name, std::size_t count, int64_t fallback) {
  auto values = c.attributes().integers(name);
  if (!values) return std::vector<int64_t>(count, fallback);
  if (values->size() != count) {
    c.attributes().fail(name, "has " + std::to_string(values->size()) + " values, expected " + std::to_string(count));
  }
  return *values;
}

// The 2-D window of a pooling or convolution node: per spatial dim (H, W) kernel, stride,
// dilation and the explicit begin/end padding, with auto_pad resolved.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, padBegin, padEnd;
};

int64_t extent(const Window& w, std::size_t d) { return (w.kernel[d] - 1) * w.dilation[d] + 1; }

// SAME_UPPER puts floor(total/2) first, SAME_LOWER last (ONNX auto_pad).
void resolveAutoPad(const Converter& c, Window& w, const ir::Dims& spatialIn) {
  const std::string autoPad = c.attributes().string("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") return;
  for (std::size_t d = 0; d < spatialIn.size(); ++d) {
    if (autoPad == "VALID") {
      w.padBegin[d] = w.padEnd[d] = 0;
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      const int64_t out = (spatialIn[d] + w.stride[d] - 1) / w.stride[d];
      const int64_t total = std::max<int64_t>((out - 1) * w.stride[d] + extent(w, d) - spatialIn[d], 0);
      const int64_t small = total / 2;
      w.padBegin[d] = autoPad == "SAME_UPPER" ? small : total - small;
      w.padEnd[d] = total - w.padBegin[d];
    } else {
      c.attributes().fail("auto_pad", "is '" + autoPad + "'; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER");
    }
  }
}

Window readWindow(const Converter& c, const ir::Dims& spatialIn, const std::vector<int64_t>& kernel) {
  const std::size_t n = spatialIn.size();
  Window w;
  w.kernel = kernel;
  w.stride = integersOr(c, "strides", n, 1);
  w.dilation = integersOr(c, "dilations", n, 1);
  const auto pads = integersOr(c, "pads", 2 * n, 0);
  w.padBegin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  w.padEnd.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  // Window values beyond 2^31 make no sense for any input and would overflow the size arithmetic.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (std::size_t d = 0; d < n; ++d) {
    if (w.kernel[d] > kMax || w.stride[d] > kMax || w.dilation[d] > kMax || w.padBegin[d] > kMax ||
        w.padEnd[d] > kMax) {
      c.fail("kernel_shape, strides, dilations and pads must be at most 2^31");
    }
    if (w.kernel[d] < 1) c.attributes().fail("kernel_shape", "must be >= 1");
    if (w.stride[d] < 1) c.attributes().fail("strides", "must be >= 1");
    if (w.dilation[d] < 1) c.attributes().fail("dilations", "must be >= 1");
    if (w.padBegin[d] < 0 || w.padEnd[d] < 0) c.attributes().fail("pads", "must be >= 0");
  }
  resolveAutoPad(c, w, spatialIn);
  return w;
}

// [top, left, bottom, right]; a 1-D window is the W dim of an H=1 image.
std::vector<int64_t> padding4(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  if (begin.size() == 1) return {0, begin[0], 0, end[0]};
  return {begin[0], begin[1], end[0], end[1]};
}

std::vector<int64_t> pair2(const std::vector<int64_t>& v, int64_t unitH) {
  if (v.size() == 1) return {unitH, v[0]};
  return v;
}

// Extra end padding that makes floor division produce ONNX's ceil_mode output size.
std::vector<int64_t> ceilModePadding(const Converter& c, const Window& w, const ir::Dims& spatialIn) {
  std::vector<int64_t> extra(spatialIn.size(), 0);
  for (std::size_t d = 0; d < spatialIn.size(); ++d) {
    const int64_t span = spatialIn[d] + w.padBegin[d] + w.padEnd[d] - extent(w, d);
    if (span < 0) c.fail("the pooling window is larger than the padded input");
    const int64_t ceilOut = (span + w.stride[d] - 1) / w.stride[d] + 1;
    extra[d] = (ceilOut - 1) * w.stride[d] + extent(w, d) - (spatialIn[d] + w.padBegin[d] + w.padEnd[d]);
  }
  return extra;
}

// MaxPool / AveragePool. 2-D windows without dilation become LightNet's maxpool2d / avgpool2d
// (1-D ones run as 2-D with H = 1); 3-D and dilated windows the N-D pool.
void convertPool(Converter& c, bool max, bool countIncludePad) {
  c.requireRank(0, {3, 4, 5});
  const ir::Dims in = c.dims(0);
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  const auto kernel = c.attributes().integers("kernel_shape");
  if (!kernel || kernel->size() != spatialIn.size()) {
    c.attributes().fail("kernel_shape", "must be present with one value per spatial dim");
  }
  const int64_t storageOrder = c.attributes().integer("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1) c.attributes().fail("storage_order", "must be 0 or 1");
  Window w = readWindow(c, spatialIn, *kernel);
  std::vector<int64_t> extra(spatialIn.size(), 0);
  if (c.attributes().integer("ceil_mode", 0) != 0) extra = ceilModePadding(c, w, spatialIn);

  std::string src = c.tensor(0);
  std::vector<int64_t> padBegin = w.padBegin, padEnd = w.padEnd;
  for (std::size_t d = 0; d < padEnd.size(); ++d) padEnd[d] += extra[d];
  if (max && c.hasOutput(1)) {
    std::vector<int64_t> pads = padBegin;
    pads.insert(pads.end(), padEnd.begin(), padEnd.end());
    c.emit("pool_argmax", {{"src", src}}, {{"dst", c.output(1)}},
           {integersParam("size", w.kernel), integersParam("stride", w.stride), integersParam("dilation", w.dilation),
            integersParam("pads", pads), boolParam("column_major", storageOrder == 1)});
  }
  const bool padded = std::any_of(w.padBegin.begin(), w.padBegin.end(), [](int64_t p) { return p > 0; }) ||
                      std::any_of(w.padEnd.begin(), w.padEnd.end(), [](int64_t p) { return p > 0; });
  if (countIncludePad && padded) {
    // Padded cells count in the divisor only when they are real zeros: pad explicitly.
    std::vector<int64_t> pads(2 * in.size(), 0);
    for (std::size_t d = 0; d < spatialIn.size(); ++d) {
      pads[2 + d] = w.padBegin[d];
      pads[in.size() + 2 + d] = w.padEnd[d];
    }
    const std::string paddedSrc = c.temporary("padded");
    c.emit("pad", {{"src", src}}, {{"dst", paddedSrc}},
           {integersParam("pads", pads), stringParam("mode", "constant"), numberParam("value", 0.0)});
    src = paddedSrc;
    std::fill(padBegin.begin(), padBegin.end(), 0);
    padEnd = extra;
  }
  const bool dilated = std::any_of(w.dilation.begin(), w.dilation.end(), [](int64_t d) { return d != 1; });
  if (spatialIn.size() == 3 || dilated) {
    std::vector<int64_t> pads = padBegin;
    pads.insert(pads.end(), padEnd.begin(), padEnd.end());
    c.emit("pool", {{"src", src}}, {{"dst", c.output(0)}},
           {stringParam("pool_op", max ? "max" : "avg"), integersParam("size", w.kernel),
            integersParam("stride", w.stride), integersParam("dilation", w.dilation), integersParam("pads", pads)});
    return;
  }
  const bool oneD = spatialIn.size() == 1;
  if (oneD) src = c.reshaped(src, {in[0], in[1], 1, c.tensorDims(src)[2]}, "as_image");
  const std::string dst = oneD ? c.temporary("pooled") : c.output(0);
  c.emit(max ? "maxpool2d" : "avgpool2d", {{"src", src}}, {{"dst", dst}},
         {integersParam("size", pair2(w.kernel, 1)), integersParam("stride", pair2(w.stride, 1)),
          integersParam("padding", padding4(padBegin, padEnd)), stringParam("autopad", "NOTSET")});
  if (oneD) {
    const ir::Dims pooled = c.tensorDims(dst);
    c.reshapeInto(0, dst, {pooled[0], pooled[1], pooled[3]});
  }
}

// Batchnorm parameters that can be folded: all four constant, float, [C].
struct BatchNormConstants {
  std::vector<double> scale, offset, mean, var;
  double epsilon = 1e-5;
};

std::optional<BatchNormConstants> foldableBatchNorm(const Converter& c, const pb::NodeProto& bn, int64_t channels) {
  if (bn.op_type() != "BatchNormalization" || !(bn.domain().empty() || bn.domain() == "ai.onnx")) return std::nullopt;
  if (bn.input_size() != 5 || bn.output_size() < 1) return std::nullopt;
  for (int i = 1; i < bn.output_size(); ++i) {
    if (!bn.output(i).empty()) return std::nullopt;
  }
  BatchNormConstants k;
  std::vector<double>* targets[] = {&k.scale, &k.offset, &k.mean, &k.var};
  for (int i = 1; i <= 4; ++i) {
    const ImportedTensor* t = c.constantValue(bn.input(i));
    if (!t || t->dtype != ir::DType::Float || t->dims != ir::Dims{channels}) return std::nullopt;
    *targets[i - 1] = toDoubles(*t);
  }
  for (const auto& attribute : bn.attribute()) {
    if (attribute.name() == "epsilon") k.epsilon = attribute.f();
    if (attribute.name() == "training_mode" && attribute.i() != 0) return std::nullopt;
    if (attribute.name() == "spatial" && attribute.i() == 0) return std::nullopt;
  }
  if (!(k.epsilon > 0)) return std::nullopt;
  return k;
}

// The conv's weight and bias with the following batchnorm applied:
// W' = W*s, B' = (B - mean)*s + offset per output channel, s = scale/sqrt(var+eps).
struct FoldedConv {
  std::string weight, bias;
  const pb::NodeProto* batchNorm = nullptr;
};

std::optional<FoldedConv> foldBatchNorm(Converter& c, const ir::Dims& weightDims) {
  const ImportedTensor* weight = c.constant(1);
  const ImportedTensor* bias = c.hasInput(2) ? c.constant(2) : nullptr;
  if (!weight || weight->dtype != ir::DType::Float) return std::nullopt;
  if (c.hasInput(2) && (!bias || bias->dtype != ir::DType::Float)) return std::nullopt;
  if (!c.hasOutput(0)) return std::nullopt;
  const pb::NodeProto* bn = c.soleConsumer(c.node().output(0));
  if (!bn || bn->input(0) != c.node().output(0)) return std::nullopt;
  const int64_t outC = weightDims[0];
  const auto k = foldableBatchNorm(c, *bn, outC);
  if (!k) return std::nullopt;
  std::vector<double> w = toDoubles(*weight);
  std::vector<double> b = bias ? toDoubles(*bias) : std::vector<double>(static_cast<std::size_t>(outC), 0.0);
  const std::size_t perChannel = w.size() / static_cast<std::size_t>(outC);
  for (std::size_t o = 0; o < static_cast<std::size_t>(outC); ++o) {
    const double s = k->scale[o] / std::sqrt(k->var[o] + k->epsilon);
    for (std::size_t j = 0; j < perChannel; ++j) w[o * perChannel + j] *= s;
    b[o] = (b[o] - k->mean[o]) * s + k->offset[o];
  }
  FoldedConv folded;
  folded.weight = c.constantTensor(fromDoubles("", ir::DType::Float, weightDims, w), c.label() + "/folded_weight");
  folded.bias = c.constantTensor(fromDoubles("", ir::DType::Float, {outC}, b), c.label() + "/folded_bias");
  folded.batchNorm = bn;
  return folded;
}

// The N-D conv op's params for a window.
std::vector<ir::Param> ndConvParams(const Window& w, int64_t group) {
  std::vector<int64_t> pads = w.padBegin;
  pads.insert(pads.end(), w.padEnd.begin(), w.padEnd.end());
  return {numberParam("group", static_cast<double>(group)), integersParam("size", w.kernel),
          integersParam("stride", w.stride), integersParam("dilation", w.dilation), integersParam("pads", pads)};
}

// The N-D conv (3-D: video and volumetric networks), with a following batchnorm folded.
void convertConvNd(Converter& c, const Window& w, const ir::Dims& weightDims, int64_t group) {
  auto folded = foldBatchNorm(c, weightDims);
  const std::string weight = folded ? folded->weight : c.tensor(1);
  const std::string bias = folded          ? folded->bias
                           : c.hasInput(2) ? c.tensor(2)
                                           : c.zeros(c.dtype(0), {weightDims[0]}, "zero_bias");
  c.emit("conv", {{"src", c.tensor(0)}, {"weight", weight}, {"bias", bias}}, {{"dst", c.output(0)}},
         ndConvParams(w, group));
  if (folded) c.absorb(*folded->batchNorm, folded->batchNorm->output(0), c.output(0));
}

}  // namespace

std::vector<ir::Param> convParams(Converter& c, const ir::Dims& in, const ir::Dims& weightDims) {
  if (in.size() < 3 || in.size() > 5) c.fail("input must be [N, C, d1..dk] with k = 1..3");
  if (weightDims.size() != in.size()) c.fail("the weight's rank differs from the input's");
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  const std::vector<int64_t> kernel(weightDims.begin() + 2, weightDims.end());
  if (auto declared = c.attributes().integers("kernel_shape"); declared && *declared != kernel) {
    c.attributes().fail("kernel_shape", "does not match the weight dims");
  }
  return ndConvParams(readWindow(c, spatialIn, kernel), c.attributes().integer("group", 1));
}

// Conv, 2-D as conv2d; 1-D as conv2d of an image with H = 1 between two reshapes; 3-D as the
// N-D conv.
void convertConv(Converter& c) {
  c.requireRank(0, {3, 4, 5});
  const ir::Dims in = c.dims(0);
  const ir::Dims weightDims = c.dims(1);
  if (weightDims.size() != in.size()) c.fail("the weight's rank differs from the input's");
  const bool oneD = in.size() == 3;
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  std::vector<int64_t> kernel(weightDims.begin() + 2, weightDims.end());
  if (auto declared = c.attributes().integers("kernel_shape"); declared && *declared != kernel) {
    c.attributes().fail("kernel_shape", "does not match the weight dims");
  }
  const Window w = readWindow(c, spatialIn, kernel);
  const int64_t group = c.attributes().integer("group", 1);
  if (in.size() == 5) return convertConvNd(c, w, weightDims, group);
  std::vector<ir::Param> params = {
      numberParam("group", static_cast<double>(group)), integersParam("size", pair2(kernel, 1)),
      integersParam("stride", pair2(w.stride, 1)),      integersParam("padding", padding4(w.padBegin, w.padEnd)),
      integersParam("dilation", pair2(w.dilation, 1)),  stringParam("autopad", "NOTSET")};
  const ir::Dims imageWeight = oneD ? ir::Dims{weightDims[0], weightDims[1], 1, weightDims[2]} : weightDims;
  std::string src = c.tensor(0);
  if (oneD) src = c.reshaped(src, {in[0], in[1], 1, in[2]}, "as_image");
  std::string weight, bias;
  const ::onnx::NodeProto* batchNorm = nullptr;
  if (auto folded = foldBatchNorm(c, imageWeight)) {
    weight = folded->weight;
    bias = folded->bias;
    batchNorm = folded->batchNorm;
  } else {
    if (!oneD) {
      weight = c.tensor(1);
    } else if (const ImportedTensor* constant = c.constant(1)) {
      ImportedTensor image = *constant;
      image.dims = imageWeight;
      weight = c.constantTensor(std::move(image), c.label() + "/image_weight");
    } else {
      weight = c.reshaped(c.tensor(1), imageWeight, "image_weight");
    }
    bias = c.hasInput(2) ? c.tensor(2) : c.zeros(c.dtype(0), {weightDims[0]}, "zero_bias");
  }
  const std::string image = oneD ? c.temporary("image") : c.output(0);
  c.emit("conv2d", {{"src", src}, {"weight", weight}, {"bias", bias}}, {{"dst", image}}, std::move(params));
  std::string dst = image;
  if (oneD) {
    const ir::Dims out = c.tensorDims(image);
    dst = c.output(0);  // once: the reshape must write the tensor a folded BatchNormalization becomes
    c.emit("reshape", {{"src", image}}, {{"dst", dst}}, {integersParam("dims", {out[0], out[1], out[3]})});
  }
  if (batchNorm) c.absorb(*batchNorm, batchNorm->output(0), dst);
}

// ConvTranspose, 2-D (1-D as an image with H = 1) on deconv2d, 3-D on the N-D deconv.
// output_shape becomes explicit padding (and output padding where the shape exceeds the full
// result).
void convertConvTranspose(Converter& c) {
  c.requireRank(0, {3, 4, 5});
  const ir::Dims in = c.dims(0);
  const ir::Dims weightDims = c.dims(1);
  if (weightDims.size() != in.size()) c.fail("the weight's rank differs from the input's");
  const std::size_t n = in.size() - 2;
  const bool oneD = n == 1;
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  std::vector<int64_t> kernel(weightDims.begin() + 2, weightDims.end());
  if (auto declared = c.attributes().integers("kernel_shape"); declared && *declared != kernel) {
    c.attributes().fail("kernel_shape", "does not match the weight dims");
  }
  const int64_t group = c.attributes().integer("group", 1);
  const auto stride = integersOr(c, "strides", n, 1);
  const auto dilation = integersOr(c, "dilations", n, 1);
  auto outputPadding = integersOr(c, "output_padding", n, 0);
  auto pads = integersOr(c, "pads", 2 * n, 0);
  const std::string autoPad = c.attributes().string("auto_pad", "NOTSET");
  const auto outputShape = c.attributes().integers("output_shape");
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" && autoPad != "VALID") {
    c.attributes().fail("auto_pad", "is '" + autoPad + "'");
  }
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (std::size_t d = 0; d < n; ++d) {
      const int64_t full = stride[d] * (spatialIn[d] - 1) + outputPadding[d] + (kernel[d] - 1) * dilation[d] + 1;
      int64_t target = spatialIn[d] * stride[d];
      if (outputShape) {
        if (outputShape->size() != n && outputShape->size() != n + 2)
          c.attributes().fail("output_shape", "has the wrong length");
        target = (*outputShape)[outputShape->size() - n + d];
      }
      const int64_t total = full - target;
      if (total < 0) {
        outputPadding[d] -= total;  // cells beyond the full result: only the bias reaches them
        pads[d] = pads[d + n] = 0;
        continue;
      }
      const bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? total / 2 : total - total / 2;
      pads[d + n] = total - pads[d];
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  std::vector<int64_t> padBegin(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<int64_t> padEnd(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  std::string src = c.tensor(0);
  std::string weight = c.tensor(1);
  const std::string bias = c.hasInput(2) ? c.tensor(2) : c.zeros(c.dtype(0), {weightDims[1] * group}, "zero_bias");
  if (n == 3) {
    c.emit("deconv", {{"src", src}, {"weight", weight}, {"bias", bias}}, {{"dst", c.output(0)}},
           {numberParam("group", static_cast<double>(group)), integersParam("size", kernel),
            integersParam("stride", stride), integersParam("dilation", dilation), integersParam("pads", pads),
            integersParam("output_padding", outputPadding)});
    return;
  }
  if (oneD) {
    src = c.reshaped(src, {in[0], in[1], 1, in[2]}, "as_image");
    weight = c.reshaped(weight, {weightDims[0], weightDims[1], 1, weightDims[2]}, "image_weight");
  }
  const std::string image = oneD ? c.temporary("image") : c.output(0);
  c.emit(
      "deconv2d", {{"src", src}, {"weight", weight}, {"bias", bias}}, {{"dst", image}},
      {numberParam("group", static_cast<double>(group)), integersParam("size", pair2(kernel, 1)),
       integersParam("stride", pair2(stride, 1)), integersParam("output_dims", {0, 0, 0, 0}),
       integersParam("padding", padding4(padBegin, padEnd)), integersParam("output_padding", pair2(outputPadding, 0)),
       integersParam("dilation", pair2(dilation, 1)), stringParam("autopad", "NOTSET")});
  if (oneD) {
    const ir::Dims out = c.tensorDims(image);
    c.reshapeInto(0, image, {out[0], out[1], out[3]});
  }
}

void convertMaxPool(Converter& c) { convertPool(c, true, false); }

// MaxUnpool: each value of X goes where its index in I points, in a zero tensor of the output's
// shape flattened (MaxPool's Indices count over N and C as well), so one scatter over that
// flat tensor. The output shape is the pool's input shape implied by the window, or output_shape.
void convertMaxUnpool(Converter& c) {
  c.requireRank(0, {3, 4, 5});
  const ir::Dims in = c.dims(0);
  if (c.dims(1) != in) c.fail("I must have the shape of X, " + ir::formatDims(in));
  if (c.dtype(1) != ir::DType::Int64) c.fail("I must be int64");
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  const auto kernel = c.attributes().integers("kernel_shape");
  if (!kernel || kernel->size() != spatialIn.size()) {
    c.attributes().fail("kernel_shape", "must be present with one value per spatial dim");
  }
  const Window w = readWindow(c, spatialIn, *kernel);
  ir::Dims out{in[0], in[1]};
  for (std::size_t d = 0; d < spatialIn.size(); ++d) {
    const int64_t extent = (spatialIn[d] - 1) * w.stride[d] + w.kernel[d] - w.padBegin[d] - w.padEnd[d];
    if (extent < 1) c.fail("the window gives spatial dim " + std::to_string(d) + " no cells");
    out.push_back(extent);
  }
  if (c.hasInput(2)) {
    const auto shape = c.constantIntegers(2, "output_shape");
    if (shape.size() != in.size()) c.fail("output_shape must have " + std::to_string(in.size()) + " values");
    if (shape[0] != in[0] || shape[1] != in[1]) c.fail("output_shape must keep X's N and C");
    for (std::size_t d = 2; d < in.size(); ++d) {
      if (shape[d] < 1 || shape[d] > (int64_t{1} << 31)) c.fail("output_shape values must be in [1, 2^31]");
      out[d] = shape[d];
    }
  }
  const std::string values = c.reshaped(c.tensor(0), {ir::elementCount(in)}, "values");
  const std::string indices = c.reshaped(c.tensor(1), {ir::elementCount(in)}, "indices");
  const std::string scattered = c.temporary("unpooled");
  c.emit("scatter_elements",
         {{"src", c.zeros(c.dtype(0), {ir::elementCount(out)}, "zeros")}, {"indices", indices}, {"updates", values}},
         {{"dst", scattered}}, {numberParam("axis", 0.0), stringParam("reduction", "none")});
  c.reshapeInto(0, scattered, out);
}

void convertAveragePool(Converter& c) { convertPool(c, false, c.attributes().integer("count_include_pad", 0) != 0); }

void convertGlobalAveragePool(Converter& c) {
  if (c.dims(0).size() < 3) c.fail("input must be [N, C, d1, ...]");
  c.emit("global_avgpool", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}});
}

void convertBatchNormalization(Converter& c) {
  if (c.attributes().integer("training_mode", 0) != 0) c.fail("training_mode=1 is not supported (inference only)");
  if (c.attributes().integer("spatial", 1) == 0) c.fail("spatial=0 is not supported");
  for (std::size_t i = 1; i < 5; ++i) {
    if (c.hasOutput(i)) c.fail("the training outputs (running mean / variance) are not supported");
  }
  const float epsilon = c.attributes().number("epsilon", 1e-5f);
  if (!(epsilon > 0)) c.attributes().fail("epsilon", "must be > 0");
  if (c.dims(0).size() < 2) c.fail("input must be [N, C, ...]");
  c.emit("batchnorm",
         {{"src", c.tensor(0)},
          {"scale", c.tensor(1)},
          {"offset", c.tensor(2)},
          {"mean", c.tensor(3)},
          {"var", c.tensor(4)}},
         {{"dst", c.output(0)}}, {numberParam("epsilon", epsilon)});
}

// LRN (the ONNX model zoo's AlexNet, CaffeNet, GoogLeNet): y = x / (bias + alpha / size *
// square_sum)^beta, square_sum over the `size` channels around each one (floor((size-1)/2) before,
// ceil((size-1)/2) after, those that exist). The squares are laid out as one image of [C, rest]
// per sample, zero-padded across channels and averaged by a (size x 1) window: the average is
// square_sum / size exactly, so alpha / size * square_sum is alpha * average.
void convertLrn(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.size() < 3) c.fail("input must be [N, C, d1, ...]");
  if (c.dtype(0) != ir::DType::Float) c.fail("input must be float");
  const int64_t size = c.attributes().integer("size", 0);
  if (size < 1) c.attributes().fail("size", "must be at least 1");
  const double alpha = c.attributes().number("alpha", 0.0001f);
  const double beta = c.attributes().number("beta", 0.75f);
  const double bias = c.attributes().number("bias", 1.0f);
  int64_t rest = 1;
  for (std::size_t d = 2; d < in.size(); ++d) rest *= in[d];

  const std::string x = c.tensor(0);
  const std::string squares = c.temporary("squares");
  binary(c, "TL_MUL", x, x, squares);
  const std::string image = c.reshaped(squares, {in[0], 1, in[1], rest}, "squares_by_channel");
  const std::string padded = c.temporary("padded");
  c.emit("pad", {{"src", image}}, {{"dst", padded}},
         {integersParam("pads", {0, 0, (size - 1) / 2, 0, 0, 0, size / 2, 0}), stringParam("mode", "constant"),
          numberParam("value", 0.0)});
  const std::string averaged = c.temporary("window_average");
  c.emit("pool", {{"src", padded}}, {{"dst", averaged}},
         {stringParam("pool_op", "avg"), integersParam("size", {size, 1}), integersParam("stride", {1, 1}),
          integersParam("dilation", {1, 1}), integersParam("pads", {0, 0, 0, 0})});
  const std::string average = c.reshaped(averaged, in, "window_average_by_element");
  const std::string scaled = c.temporary("scaled");
  binary(c, "TL_MUL", average, c.scalar(ir::DType::Float, alpha, "alpha"), scaled);
  const std::string shifted = c.temporary("shifted");
  binary(c, "TL_SUM", scaled, c.scalar(ir::DType::Float, bias, "bias"), shifted);
  const std::string denominator = c.temporary("denominator");
  binary(c, "TL_POW", shifted, c.scalar(ir::DType::Float, beta, "beta"), denominator);
  binary(c, "TL_DIV", x, denominator, c.output(0));
}

}  // namespace qaic::onnx
