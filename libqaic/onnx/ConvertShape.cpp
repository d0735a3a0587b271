// SPDX-License-Identifier: Apache-2.0
// Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Concat, Pad and the operators that vanish
// (Identity, Dropout).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

std::vector<int64_t> integerInput(Converter& c, std::size_t i, const std::string& role) {
  return c.constantIntegers(i, role);
}

// Unsqueeze / Squeeze axes: attribute before opset 13, optional constant input after.
std::optional<std::vector<int64_t>> axesOf(Converter& c) {
  if (c.opset() < 13) return c.attributes().integers("axes");
  if (!c.hasInput(1)) return std::nullopt;
  return c.constantIntegers(1, "axes");
}

}  // namespace

// ONNX's Reshape target: 0 copies the input dim (unless allowzero), one -1 is inferred.
ir::Dims resolveReshape(Converter& c, const ir::Dims& in, const std::vector<int64_t>& target) {
  const bool allowZero = c.attributes().integer("allowzero", 0) != 0;
  ir::Dims out;
  std::ptrdiff_t inferred = -1;
  int64_t known = 1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        c.fail("shape[" + std::to_string(i) + "] is 0 but the input has only " + std::to_string(in.size()) + " dims");
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0) c.fail("shape has more than one -1");
      inferred = static_cast<std::ptrdiff_t>(i);
    } else if (d <= 0) {
      c.fail("shape[" + std::to_string(i) + "] is " + std::to_string(d) + "; empty or negative dims are not supported");
    } else {
      if (known > (int64_t{1} << 62) / d) c.fail("shape is too large");
      known *= d;
    }
    out.push_back(d);
  }
  const int64_t total = ir::elementCount(in);
  if (inferred >= 0) {
    if (total % known != 0) c.fail("shape cannot hold the input's " + std::to_string(total) + " elements");
    out[static_cast<std::size_t>(inferred)] = total / known;
  }
  if (ir::elementCount(out) != total) {
    c.fail("shape holds " + std::to_string(ir::elementCount(out)) + " elements, the input " + std::to_string(total));
  }
  return out;
}

std::vector<int64_t> reshapeTarget(Converter& c) {
  if (c.opset() < 5) {
    auto shape = c.attributes().integers("shape");
    if (!shape) c.attributes().fail("shape", "is required");
    return *shape;
  }
  return integerInput(c, 1, "shape");
}

void convertFlatten(Converter& c) {
  const auto rank = static_cast<int64_t>(c.dims(0).size());
  int64_t axis = c.attributes().integer("axis", 1);
  if (axis < -rank || axis > rank) c.attributes().fail("axis", "is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  c.emit("flatten", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, {numberParam("axis", static_cast<double>(axis))});
}

void convertReshape(Converter& c) {
  const std::vector<int64_t> target = reshapeTarget(c);
  c.reshapeInto(0, c.tensor(0), resolveReshape(c, c.dims(0), target));
}

void convertSqueeze(Converter& c) {
  const ir::Dims in = c.dims(0);
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (auto axes = axesOf(c)) {
    for (int64_t axis : *axes) {
      const auto a = static_cast<std::size_t>(normalizeAxis(c, axis, static_cast<std::size_t>(rank), "axes"));
      if (in[a] != 1) c.fail("axis " + std::to_string(axis) + " has size " + std::to_string(in[a]) + ", not 1");
      drop[a] = true;
    }
  } else {
    for (std::size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  ir::Dims out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  c.reshapeInto(0, c.tensor(0), out);
}

void convertUnsqueeze(Converter& c) {
  ir::Dims out = c.dims(0);
  auto axes = axesOf(c);
  if (!axes) c.fail("axes are required");
  *axes = distinctAxes(c, *axes, out.size() + axes->size());
  std::sort(axes->begin(), axes->end());
  for (int64_t axis : *axes) out.insert(out.begin() + axis, 1);
  if (out.size() > ir::kMaxRank) c.fail("the result has more than " + std::to_string(ir::kMaxRank) + " dims");
  c.reshapeInto(0, c.tensor(0), out);
}

void convertTranspose(Converter& c) {
  const std::size_t rank = c.dims(0).size();
  if (rank <= 1) return c.alias(0, c.tensor(0));  // nothing to permute
  std::vector<int64_t> perm;
  if (auto given = c.attributes().integers("perm")) {
    perm = *given;
  } else {
    for (std::size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  c.emit("transpose", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, {integersParam("axes", perm)});
}

// DepthToSpace and SpaceToDepth are, by the ONNX definition, a reshape to rank 6, a transpose
// and a reshape back.
namespace {
void blocksToOrFromDepth(Converter& c, bool toSpace) {
  c.requireRank(0, {4});
  const ir::Dims in = c.dims(0);
  const int64_t block = c.attributes().integer("blocksize", 0);
  if (block < 1) c.fail("attribute 'blocksize' must be >= 1");
  const int64_t n = in[0], ch = in[1], h = in[2], w = in[3];
  ir::Dims view, out;
  std::vector<int64_t> perm;
  if (toSpace) {
    if (ch % (block * block) != 0)
      c.fail("input channels " + std::to_string(ch) + " are not a multiple of blocksize^2 (" +
             std::to_string(block * block) + ")");
    const std::string mode = c.attributes().string("mode", "DCR");
    if (mode == "DCR") {
      view = {n, block, block, ch / (block * block), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      view = {n, ch / (block * block), block, block, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      c.fail("attribute 'mode' must be DCR or CRD, not '" + mode + "'");
    }
    out = {n, ch / (block * block), h * block, w * block};
  } else {
    if (h % block != 0 || w % block != 0)
      c.fail("input height and width (" + std::to_string(h) + ", " + std::to_string(w) +
             ") are not multiples of blocksize " + std::to_string(block));
    view = {n, ch, h / block, block, w / block, block};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, ch * block * block, h / block, w / block};
  }
  const std::string moved = c.temporary("moved");
  c.emit("transpose", {{"src", c.reshaped(c.tensor(0), view, "blocks")}}, {{"dst", moved}},
         {integersParam("axes", perm)});
  c.reshapeInto(0, moved, out);
}
}  // namespace

void convertDepthToSpace(Converter& c) { blocksToOrFromDepth(c, true); }
void convertSpaceToDepth(Converter& c) { blocksToOrFromDepth(c, false); }

// N inputs as a chain of concats. Empty constant inputs (x.shape[2:] of a rank-2 x, in shape
// arithmetic) add nothing and are left out.
void convertConcat(Converter& c) {
  if (c.inputCount() < 1) c.fail("needs at least one input");
  if (!c.attributes().has("axis")) c.attributes().fail("axis", "is required");
  const auto axis = normalizeAxis(c, c.attributes().integer("axis", 0), c.dims(0).size());
  std::vector<std::size_t> inputs;
  for (std::size_t i = 0; i < c.inputCount(); ++i) {
    const ImportedTensor* constant = c.constant(i);
    if (!constant || !constant->data.empty()) inputs.push_back(i);
  }
  if (inputs.empty()) {
    ImportedTensor empty = c.requireConstant(0, "inputs");
    for (std::size_t i = 1; i < c.inputCount(); ++i)
      empty.dims[static_cast<std::size_t>(axis)] += c.dims(i)[static_cast<std::size_t>(axis)];
    return c.setConstant(0, std::move(empty));
  }
  std::string acc = c.tensor(inputs[0]);
  if (inputs.size() == 1) return c.alias(0, acc);
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const std::string dst = k + 1 == inputs.size() ? c.output(0) : c.temporary("concat" + std::to_string(k));
    c.emit("concat", {{"src1", acc}, {"src2", c.tensor(inputs[k])}}, {{"dst", dst}},
           {numberParam("axis", static_cast<double>(axis))});
    acc = dst;
  }
}

namespace {

// Pad's axes input (opset 18): `pads` holds the begins and then the ends of the listed axes only.
std::vector<int64_t> padsOnAxes(Converter& c, const std::vector<int64_t>& pads, const std::vector<int64_t>& axes,
                                std::size_t rank) {
  if (pads.size() != 2 * axes.size())
    c.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> full(2 * rank, 0);
  const std::vector<int64_t> normalized = distinctAxes(c, axes, rank);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const auto axis = static_cast<std::size_t>(normalized[k]);
    full[axis] = pads[k];
    full[rank + axis] = pads[axes.size() + k];
  }
  return full;
}

// Pad mode wrap (opset 19): each padded axis becomes [x[-begin:], x, x[:end]], as a chain of
// concats of slices.
void emitWrapPad(Converter& c, std::string src, const std::vector<int64_t>& pads) {
  const std::size_t rank = pads.size() / 2;
  std::vector<std::size_t> padded;
  for (std::size_t axis = 0; axis < rank; ++axis)
    if (pads[axis] > 0 || pads[rank + axis] > 0) padded.push_back(axis);
  if (padded.empty()) return c.alias(0, src);
  for (std::size_t k = 0; k < padded.size(); ++k) {
    const std::size_t axis = padded[k];
    const int64_t dim = c.tensorDims(src)[axis], begin = pads[axis], end = pads[rank + axis];
    if (begin > dim || end > dim)
      c.fail("wrap pads of axis " + std::to_string(axis) + " exceed its dim " + std::to_string(dim));
    std::vector<std::string> parts;
    if (begin > 0) parts.push_back(c.sliced(src, axis, dim - begin, dim, "wrap_begin"));
    parts.push_back(src);
    if (end > 0) parts.push_back(c.sliced(src, axis, 0, end, "wrap_end"));
    std::string joined = parts[0];
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const bool last = k + 1 == padded.size() && i + 1 == parts.size();
      const std::string dst = last ? c.output(0) : c.temporary("wrapped");
      c.emit("concat", {{"src1", joined}, {"src2", parts[i]}}, {{"dst", dst}},
             {numberParam("axis", static_cast<double>(axis))});
      joined = dst;
    }
    src = joined;
  }
}

}  // namespace

void convertPad(Converter& c) {
  const std::size_t rank = c.dims(0).size();
  std::string mode = c.attributes().string("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    auto given = c.attributes().integers(c.opset() < 2 ? "paddings" : "pads");
    if (!given) c.attributes().fail("pads", "is required");
    pads = *given;
    value = c.attributes().number("value", 0.0f);
  } else {
    pads = integerInput(c, 1, "pads");
    if (c.hasInput(2)) {
      value = scalarValue(c.requireConstant(2, "constant_value"), "constant_value");
    }
    if (c.hasInput(3)) pads = padsOnAxes(c, pads, c.constantIntegers(3, "axes"), rank);
  }
  if (pads.size() != 2 * rank) {
    c.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * rank));
  }
  if (std::any_of(pads.begin(), pads.end(),
                  [](int64_t p) { return p > (int64_t{1} << 31) || p < -(int64_t{1} << 31); })) {
    c.fail("pads beyond 2^31 are not supported");
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    c.attributes().fail("mode", "is '" + mode + "'; expected constant, reflect, edge or wrap");
  }
  // Negative pads crop: a slice first, then the positive pads.
  std::string src = c.tensor(0);
  const ir::Dims in = c.dims(0);
  for (std::size_t axis = 0; axis < rank; ++axis) {
    const int64_t begin = std::min<int64_t>(pads[axis], 0), end = std::min<int64_t>(pads[rank + axis], 0);
    if (begin == 0 && end == 0) continue;
    if (in[axis] + begin + end < 1) c.fail("pads crop axis " + std::to_string(axis) + " to nothing");
    src = c.sliced(src, axis, -begin, in[axis] + end, "cropped");
    pads[axis] = std::max<int64_t>(pads[axis], 0);
    pads[rank + axis] = std::max<int64_t>(pads[rank + axis], 0);
  }
  if (mode == "wrap") return emitWrapPad(c, src, pads);
  c.emit("pad", {{"src", src}}, {{"dst", c.output(0)}},
         {integersParam("pads", pads), stringParam("mode", mode), numberParam("value", value)});
}

void convertIdentity(Converter& c) { c.alias(0, c.tensor(0)); }

void convertDropout(Converter& c) {
  if (c.opset() < 7 && c.attributes().integer("is_test", 0) == 0) {
    c.fail("is_test=0 (training) is not supported");
  }
  if (c.hasInput(2)) {
    const bool training = scalarValue(c.requireConstant(2, "training_mode"), "training_mode") != 0;
    const double ratio = c.hasInput(1) ? scalarValue(c.requireConstant(1, "ratio"), "ratio") : 0.5;
    if (training && ratio != 0)
      c.fail("training_mode=true with a nonzero ratio is random; only inference is supported");
  }
  c.alias(0, c.tensor(0));
  if (c.hasOutput(1)) {
    // All ones: inference drops nothing. Built in the mask's own type, one element repeated, so
    // the limit bounds what is allocated (a list of int64 ones took eight bytes per element).
    const ir::Dims dims = c.dims(0);
    const ir::DType maskType = c.opset() >= 10 ? ir::DType::Bool : c.dtype(0);
    const ImportedTensor one = fromInt64s("", maskType, {}, {1});
    const auto count = static_cast<std::size_t>(ir::elementCount(dims));
    if (one.data.empty() || count > kMaxFoldedBytes / one.data.size())
      c.fail("the mask output would exceed " + std::to_string(kMaxFoldedBytes) + " bytes");
    ImportedTensor mask{"", maskType, dims, std::vector<std::byte>(count * one.data.size())};
    for (std::size_t at = 0; at < mask.data.size(); at += one.data.size())
      std::memcpy(mask.data.mutableData() + at, one.data.data(), one.data.size());
    c.setConstant(1, std::move(mask));
  }
}

}  // namespace qaic::onnx

namespace qaic::onnx {
namespace {

constexpr int64_t kMaxIndex = int64_t{1} << 62;

// One axis of a Slice, clamped the ONNX way (start in [0, dim] or [0, dim-1], end in [0, dim] or
// [-1, dim-1] for a positive or negative step).
struct SliceAxis {
  int64_t start = 0, end = 0, step = 1;
};

SliceAxis clampSlice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  start = std::clamp(start, -kMaxIndex, kMaxIndex);
  end = std::clamp(end, -kMaxIndex, kMaxIndex);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) return {std::clamp<int64_t>(start, 0, dim), std::clamp<int64_t>(end, 0, dim), step};
  return {std::clamp<int64_t>(start, 0, dim - 1), std::clamp<int64_t>(end, -1, dim - 1), step};
}

int64_t sliceLength(const SliceAxis& a) {
  const int64_t span = a.step > 0 ? a.end - a.start : a.start - a.end;
  const int64_t stride = a.step > 0 ? a.step : -a.step;
  return span <= 0 ? 0 : (span + stride - 1) / stride;
}

// A strided_slice of input 0 into output `outputIndex` with one SliceAxis per axis. An empty
// slice of a constant (x.shape[2:] of a rank-2 x) is an empty constant for shape arithmetic.
void emitSlice(Converter& c, const std::vector<SliceAxis>& axes, std::size_t outputIndex) {
  const auto empty = std::find_if(axes.begin(), axes.end(), [](const SliceAxis& a) { return sliceLength(a) < 1; });
  if (empty != axes.end()) {
    if (!c.constant(0)) {
      c.fail("the slice of axis " + std::to_string(empty - axes.begin()) +
             " is empty; empty tensors are not supported");
    }
    ImportedTensor result = *c.constant(0);
    for (std::size_t i = 0; i < axes.size(); ++i) result.dims[i] = sliceLength(axes[i]);
    result.data.clear();
    return c.setConstant(outputIndex, std::move(result));
  }
  const std::string dst = c.output(outputIndex);
  std::vector<int64_t> starts, ends, steps;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    starts.push_back(axes[i].start);
    ends.push_back(axes[i].end);
    steps.push_back(axes[i].step);
  }
  c.emit("strided_slice", {{"src", c.tensor(0)}}, {{"dst", dst}},
         {integersParam("starts", starts), integersParam("ends", ends), integersParam("steps", steps)});
}

std::vector<SliceAxis> wholeAxes(const ir::Dims& dims) {
  std::vector<SliceAxis> axes;
  for (int64_t d : dims) axes.push_back({0, d, 1});
  return axes;
}

}  // namespace

void convertSlice(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attributes().integers("starts").value_or(std::vector<int64_t>{});
    ends = c.attributes().integers("ends").value_or(std::vector<int64_t>{});
    axes = c.attributes().integers("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = c.constantIntegers(1, "starts");
    ends = c.constantIntegers(2, "ends");
    if (c.hasInput(3)) axes = c.constantIntegers(3, "axes");
    if (c.hasInput(4)) steps = c.constantIntegers(4, "steps");
  }
  if (starts.size() != ends.size()) c.fail("starts and ends differ in length");
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> slice = wholeAxes(in);
  const std::vector<int64_t> normalized = distinctAxes(c, axes, in.size());
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const auto axis = static_cast<std::size_t>(normalized[k]);
    if (steps[k] == 0) c.fail("a step is 0");
    slice[axis] = clampSlice(starts[k], ends[k], steps[k], in[axis]);
  }
  emitSlice(c, slice, 0);
}

void convertSplit(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const auto axis = static_cast<std::size_t>(normalizeAxis(c, c.attributes().integer("axis", 0), in.size()));
  const std::size_t outputs = c.outputCount();
  std::vector<int64_t> parts;
  if (c.opset() >= 13 && c.hasInput(1)) {
    parts = c.constantIntegers(1, "split");
  } else if (auto given = c.attributes().integers("split")) {
    parts = *given;
  } else if (c.attributes().has("num_outputs")) {
    // Opset 18: parts of ceil(dim / n), the last one what remains.
    const int64_t n = c.attributes().integer("num_outputs", 0);
    if (n < 1 || static_cast<std::size_t>(n) != outputs)
      c.attributes().fail("num_outputs", "is " + std::to_string(n) + " for " + std::to_string(outputs) + " outputs");
    const int64_t part = (in[axis] + n - 1) / n;
    parts.assign(outputs, part);
    parts.back() = in[axis] - part * (n - 1);
  } else {
    if (outputs == 0 || in[axis] % static_cast<int64_t>(outputs) != 0) {
      c.fail("dim " + std::to_string(in[axis]) + " does not split into " + std::to_string(outputs) + " equal parts");
    }
    parts.assign(outputs, in[axis] / static_cast<int64_t>(outputs));
  }
  if (parts.size() != outputs)
    c.fail("split has " + std::to_string(parts.size()) + " parts for " + std::to_string(outputs) + " outputs");
  int64_t start = 0;
  for (std::size_t k = 0; k < outputs; ++k) {
    if (parts[k] < 1) c.fail("part " + std::to_string(k) + " is empty; empty tensors are not supported");
    std::vector<SliceAxis> slice = wholeAxes(in);
    slice[axis] = {start, start + parts[k], 1};
    start += parts[k];
    if (!c.hasOutput(k)) continue;
    emitSlice(c, slice, k);
  }
  if (start != in[axis])
    c.fail("the parts add up to " + std::to_string(start) + ", not the dim " + std::to_string(in[axis]));
}

void convertExpand(Converter& c) {
  const ir::Dims in = c.dims(0);
  const std::vector<int64_t> shape = c.constantIntegers(1, "shape");
  // Bidirectional: the result is the broadcast of the input dims and `shape`.
  const std::size_t rank = std::max(in.size(), shape.size());
  ir::Dims out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t a = i + in.size() >= rank ? in[i + in.size() - rank] : 1;
    const int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    if (a != b && a != 1 && b != 1) c.fail("input dims do not broadcast with shape");
    if (a < 1 || b < 1) c.fail("empty or negative dims are not supported");
    out[i] = a == 1 ? b : a;
  }
  if (out == in) return c.alias(0, c.tensor(0));
  if (out.size() > ir::kMaxRank) c.fail("the result has more than " + std::to_string(ir::kMaxRank) + " dims");
  c.emit("expand", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, {integersParam("dims", out)});
}

void convertTile(Converter& c) {
  const ir::Dims in = c.dims(0);
  const std::vector<int64_t> repeats = c.constantIntegers(1, "repeats");
  if (repeats.size() != in.size())
    c.fail("repeats has " + std::to_string(repeats.size()) + " values for rank " + std::to_string(in.size()));
  if (std::any_of(repeats.begin(), repeats.end(), [](int64_t r) { return r < 1; })) {
    c.fail("repeats must be >= 1; empty tensors are not supported");
  }
  if (in.empty()) return c.alias(0, c.tensor(0));
  c.emit("tile", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}}, {integersParam("repeats", repeats)});
}

void convertTrilu(Converter& c) {
  if (c.dims(0).size() < 2) c.fail("input must have rank >= 2");
  int64_t k = 0;
  if (c.hasInput(1)) {
    const auto values = c.constantIntegers(1, "k");
    if (values.size() != 1) c.fail("k must hold one value");
    k = std::clamp<int64_t>(values[0], -(int64_t{1} << 31), int64_t{1} << 31);  // beyond any matrix
  }
  c.emit("trilu", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {boolParam("upper", c.attributes().integer("upper", 1) != 0), numberParam("k", static_cast<double>(k))});
}

}  // namespace qaic::onnx
