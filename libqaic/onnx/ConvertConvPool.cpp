// Conv (with batchnorm folding), MaxPool, AveragePool, GlobalAveragePool, BatchNormalization.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <optional>

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

void convertPool(Converter& c, const std::string& optype, bool countIncludePad) {
  c.requireRank(0, {3, 4});
  if (c.hasOutput(1)) c.fail("the Indices output is not supported");
  const ir::Dims in = c.dims(0);
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  const auto kernel = c.attributes().integers("kernel_shape");
  if (!kernel || kernel->size() != spatialIn.size()) {
    c.attributes().fail("kernel_shape", "must be present with one value per spatial dim");
  }
  if (c.attributes().integer("storage_order", 0) != 0) c.attributes().fail("storage_order", "must be 0");
  Window w = readWindow(c, spatialIn, *kernel);
  for (int64_t d : w.dilation) {
    if (d != 1) c.attributes().fail("dilations", "other than 1 are not supported by " + optype);
  }
  std::vector<int64_t> extra(spatialIn.size(), 0);
  if (c.attributes().integer("ceil_mode", 0) != 0) extra = ceilModePadding(c, w, spatialIn);

  std::string src = c.tensor(0);
  const bool oneD = spatialIn.size() == 1;
  if (oneD) {
    const std::string image = c.temporary("as_image");
    c.emit("reshape", {{"src", src}}, {{"dst", image}}, {integersParam("dims", {in[0], in[1], 1, in[2]})});
    src = image;
  }
  std::vector<int64_t> padBegin = w.padBegin, padEnd = w.padEnd;
  for (std::size_t d = 0; d < padEnd.size(); ++d) padEnd[d] += extra[d];
  const bool padded = std::any_of(w.padBegin.begin(), w.padBegin.end(), [](int64_t p) { return p > 0; }) ||
                      std::any_of(w.padEnd.begin(), w.padEnd.end(), [](int64_t p) { return p > 0; });
  if (countIncludePad && padded) {
    // Padded cells count in the divisor only when they are real zeros: pad explicitly.
    const auto p4 = padding4(w.padBegin, w.padEnd);
    const std::string paddedSrc = c.temporary("padded");
    c.emit("pad", {{"src", src}}, {{"dst", paddedSrc}},
           {integersParam("pads", {0, 0, p4[0], p4[1], 0, 0, p4[2], p4[3]}), stringParam("mode", "constant"),
            numberParam("value", 0.0)});
    src = paddedSrc;
    std::fill(padBegin.begin(), padBegin.end(), 0);
    padEnd = extra;
  }
  const std::string dst = oneD ? c.temporary("pooled") : c.output(0);
  c.emit(optype, {{"src", src}}, {{"dst", dst}},
         {integersParam("size", pair2(w.kernel, 1)), integersParam("stride", pair2(w.stride, 1)),
          integersParam("padding", padding4(padBegin, padEnd)), stringParam("autopad", "NOTSET")});
  if (oneD) {
    const ir::Dims pooled = c.tensorDims(dst);
    c.emit("reshape", {{"src", dst}}, {{"dst", c.output(0)}},
           {integersParam("dims", {pooled[0], pooled[1], pooled[3]})});
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
    *targets[i - 1] = toDoubles(*t, bn.input(i));
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

// storedDims: the dims the folded weight is created with (a 1-D conv's weight as an H = 1 image).
std::optional<FoldedConv> foldBatchNorm(Converter& c, const ir::Dims& weightDims, const ir::Dims& storedDims) {
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
  std::vector<double> w = toDoubles(*weight, "weight");
  std::vector<double> b = bias ? toDoubles(*bias, "bias") : std::vector<double>(static_cast<std::size_t>(outC), 0.0);
  const std::size_t perChannel = w.size() / static_cast<std::size_t>(outC);
  for (std::size_t o = 0; o < static_cast<std::size_t>(outC); ++o) {
    const double s = k->scale[o] / std::sqrt(k->var[o] + k->epsilon);
    for (std::size_t j = 0; j < perChannel; ++j) w[o * perChannel + j] *= s;
    b[o] = (b[o] - k->mean[o]) * s + k->offset[o];
  }
  FoldedConv folded;
  folded.weight = c.constantTensor(fromDoubles("", ir::DType::Float, storedDims, w), c.label() + "/folded_weight");
  folded.bias = c.constantTensor(fromDoubles("", ir::DType::Float, {outC}, b), c.label() + "/folded_bias");
  folded.batchNorm = bn;
  return folded;
}

}  // namespace

// A 1-D convolution ([N, C, L], weight [O, C/group, K]) runs as conv2d on an H = 1 image, as 1-D
// pooling does: src reshaped to [N, C, 1, L], the weight stored as [O, C/group, 1, K], the result
// reshaped back to [N, O, L'].
void convertConv(Converter& c) {
  c.requireRank(0, {3, 4});
  c.requireRank(1, {3, 4});
  const ir::Dims in = c.dims(0);
  const ir::Dims weightDims = c.dims(1);
  if (in.size() != weightDims.size()) c.fail("the input and the weight must have the same rank (3 or 4)");
  const bool oneD = in.size() == 3;
  const ir::Dims spatialIn(in.begin() + 2, in.end());
  std::vector<int64_t> kernel(weightDims.begin() + 2, weightDims.end());
  if (auto declared = c.attributes().integers("kernel_shape"); declared && *declared != kernel) {
    c.attributes().fail("kernel_shape", "does not match the weight dims");
  }
  const Window w = readWindow(c, spatialIn, kernel);
  const int64_t group = c.attributes().integer("group", 1);
  std::vector<ir::Param> params = {numberParam("group", static_cast<double>(group)),
                                   integersParam("size", pair2(kernel, 1)),
                                   integersParam("stride", pair2(w.stride, 1)),
                                   integersParam("padding", padding4(w.padBegin, w.padEnd)),
                                   integersParam("dilation", pair2(w.dilation, 1)),
                                   stringParam("autopad", "NOTSET")};
  const ir::Dims weightAsImage =
      oneD ? ir::Dims{weightDims[0], weightDims[1], 1, weightDims[2]} : weightDims;
  std::string src = c.tensor(0);
  if (oneD) {
    const std::string image = c.temporary("as_image");
    c.emit("reshape", {{"src", src}}, {{"dst", image}}, {integersParam("dims", {in[0], in[1], 1, in[2]})});
    src = image;
  }
  const auto folded = foldBatchNorm(c, weightDims, weightAsImage);
  std::string weight, bias;
  if (folded) {
    weight = folded->weight;
    bias = folded->bias;
  } else {
    if (oneD) {
      ImportedTensor image = c.requireConstant(1, "weight");
      image.dims = weightAsImage;
      weight = c.constantTensor(std::move(image), c.label() + "/weight_as_image");
    } else {
      weight = c.tensor(1);
    }
    bias = c.hasInput(2) ? c.tensor(2) : c.zeros(c.dtype(0), {weightDims[0]}, "zero_bias");
  }
  const std::string dst = oneD ? c.temporary("convolved") : c.output(0);
  c.emit("conv2d", {{"src", src}, {"weight", weight}, {"bias", bias}}, {{"dst", dst}}, std::move(params));
  std::string result = dst;
  if (oneD) {
    const ir::Dims convolved = c.tensorDims(dst);
    result = c.output(0);
    c.emit("reshape", {{"src", dst}}, {{"dst", result}},
           {integersParam("dims", {convolved[0], convolved[1], convolved[3]})});
  }
  if (folded) c.absorb(*folded->batchNorm, folded->batchNorm->output(0), result);
}

void convertMaxPool(Converter& c) { convertPool(c, "maxpool2d", false); }

void convertAveragePool(Converter& c) {
  convertPool(c, "avgpool2d", c.attributes().integer("count_include_pad", 0) != 0);
}

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
         {{"src", c.tensor(0)}, {"scale", c.tensor(1)}, {"offset", c.tensor(2)}, {"mean", c.tensor(3)},
          {"var", c.tensor(4)}},
         {{"dst", c.output(0)}}, {numberParam("epsilon", epsilon)});
}

}  // namespace qaic::onnx
