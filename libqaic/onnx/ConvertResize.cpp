// SPDX-License-Identifier: Apache-2.0
// Resize (opset 10 and later) on the interpolate op: the output dims from `sizes` or from
// floor(input * scales), and the scales the coordinate mapping uses (sizes / input when sizes
// are given). tf_crop_and_resize (a region of interest) is not supported.
// Upsample (opsets 7 to 9, which PyTorch writes below opset 10) is Resize-10: asymmetric
// coordinates, nearest taking the floor.
// GridSample (opsets 16 and 20) on the grid_sample op, RoiAlign (opsets 10 and 16) on roi_align.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ir/OpRegistry.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

std::string oneOf(Converter& c, const std::string& attribute, const std::string& fallback,
                  std::span<const std::string_view> allowed) {
  const std::string value = c.attributes().string(attribute, fallback);
  for (std::string_view a : allowed) {
    if (a == value) return value;
  }
  c.attributes().fail(attribute, "is '" + value + "', which is not supported");
}

// Opset 18's axes (normalized): `values` given for those axes only, spread over the whole rank
// with the input's dim (`sizes`) or a scale of 1 for the others.
std::vector<double> onAxes(Converter& c, const std::vector<double>& values, const std::string& what,
                           const std::vector<int64_t>& axes, const ir::Dims& in, bool sizes) {
  if (axes.empty()) {
    if (values.size() != in.size())
      c.fail(what + " has " + std::to_string(values.size()) + " values for rank " + std::to_string(in.size()));
    return values;
  }
  if (values.size() != axes.size())
    c.fail(what + " has " + std::to_string(values.size()) + " values for " + std::to_string(axes.size()) + " axes");
  std::vector<double> full(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) full[i] = sizes ? static_cast<double>(in[i]) : 1.0;
  for (std::size_t k = 0; k < axes.size(); ++k) full[static_cast<std::size_t>(axes[k])] = values[k];
  return full;
}

}  // namespace

void convertUpsample(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  std::string mode = c.attributes().string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";  // opset 7's spelling
  if (mode != "nearest" && mode != "linear")
    c.attributes().fail("mode", "is '" + mode + "'; expected nearest or linear");
  std::vector<double> scales;
  if (c.opset() < 9) {
    const auto given = c.attributes().numbers("scales");
    if (!given) c.attributes().fail("scales", "is required before opset 9");
    scales.assign(given->begin(), given->end());
  } else {
    if (!c.hasInput(1)) c.fail("needs scales");
    scales = toDoubles(c.requireConstant(1, "scales"));
  }
  if (scales.size() != in.size())
    c.fail("scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(in.size()));
  ir::Dims out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!(scales[i] >= 1)) c.fail("scales must be >= 1 (Upsample only enlarges)");
    const double d = std::floor(static_cast<double>(in[i]) * scales[i]);
    if (d > 1e12) c.fail("scale " + std::to_string(scales[i]) + " of axis " + std::to_string(i) + " gives a huge dim");
    out.push_back(static_cast<int64_t>(d));
  }
  c.emit("interpolate", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {stringParam("mode", mode), stringParam("coordinate_mode", "asymmetric"), stringParam("nearest_mode", "floor"),
          numbersParam("scales", scales), integersParam("dims", out), numberParam("cubic_coeff_a", -0.75),
          boolParam("exclude_outside", false)});
}

void convertResize(Converter& c) {
  const ir::Dims in = c.dims(0);
  if (in.empty()) c.fail("input must have rank >= 1");
  const std::string mode = oneOf(c, "mode", "nearest", ir::kInterpolationModes);
  const std::string coordinates = oneOf(c, "coordinate_transformation_mode",
                                        c.opset() < 11 ? "asymmetric" : "half_pixel", ir::kCoordinateModes);
  const std::string nearest = oneOf(c, "nearest_mode", "round_prefer_floor", ir::kNearestModes);
  const std::vector<int64_t> axes = distinctAxes(c, c.attributes().integers("axes").value_or(std::vector<int64_t>{}),
                                                 in.size());
  std::vector<bool> listed(in.size(), axes.empty());
  for (int64_t axis : axes) listed[static_cast<std::size_t>(axis)] = true;
  const std::string policy = c.attributes().string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.attributes().fail("keep_aspect_ratio_policy", "is '" + policy + "'; expected stretch, not_larger or not_smaller");
  // Opset 10: X, scales. Later: X, roi, scales, sizes.
  const std::size_t scalesInput = c.opset() < 11 ? 1 : 2;
  const std::size_t sizesInput = 3;
  std::vector<double> scales;
  ir::Dims out;
  if (c.opset() >= 11 && c.hasInput(sizesInput) && ir::elementCount(c.dims(sizesInput)) > 0) {
    const auto given = c.constantIntegers(sizesInput, "sizes");
    std::vector<double> sizes = onAxes(c, std::vector<double>(given.begin(), given.end()), "sizes", axes, in, true);
    for (double size : sizes)
      if (size < 1) c.fail("sizes must be >= 1; empty tensors are not supported");
    if (policy != "stretch") {
      // One scale for the given axes, the smallest (not_larger) or largest (not_smaller) of
      // theirs; their sizes follow from it, rounded half to even.
      double scale = policy == "not_larger" ? INFINITY : 0;
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (!listed[i]) continue;
        const double r = sizes[i] / static_cast<double>(in[i]);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      if (std::isfinite(scale) && scale > 0) {
        for (std::size_t i = 0; i < in.size(); ++i) {
          if (!listed[i]) continue;
          sizes[i] = std::max(1.0, std::nearbyint(scale * static_cast<double>(in[i])));
        }
      }
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      out.push_back(static_cast<int64_t>(sizes[i]));
      scales.push_back(sizes[i] / static_cast<double>(in[i]));
    }
  } else {
    if (!c.hasInput(scalesInput)) c.fail("needs scales or sizes");
    scales = onAxes(c, toDoubles(c.requireConstant(scalesInput, "scales")), "scales", axes, in, false);
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!(scales[i] > 0)) c.fail("scales must be > 0");
      const double d = std::floor(static_cast<double>(in[i]) * scales[i]);
      if (d < 1 || d > 1e12)
        c.fail("scale " + std::to_string(scales[i]) + " of axis " + std::to_string(i) + " gives an empty or huge dim");
      out.push_back(static_cast<int64_t>(d));
    }
  }
  // Antialiasing (opset 18) widens the filter when shrinking; without shrinking it changes nothing.
  if (c.attributes().integer("antialias", 0) != 0 && mode != "nearest" &&
      std::any_of(scales.begin(), scales.end(), [](double s) { return s < 1; }))
    c.attributes().fail("antialias", "is 1 while shrinking an axis, which is not supported");
  c.emit("interpolate", {{"src", c.tensor(0)}}, {{"dst", c.output(0)}},
         {stringParam("mode", mode), stringParam("coordinate_mode", coordinates), stringParam("nearest_mode", nearest),
          numbersParam("scales", scales), integersParam("dims", out),
          numberParam("cubic_coeff_a", c.attributes().number("cubic_coeff_a", -0.75f)),
          boolParam("exclude_outside", c.attributes().integer("exclude_outside", 0) != 0)});
}

void convertGridSample(Converter& c) {
  // Opset 16 spells the modes bilinear and bicubic, opset 20 linear and cubic; exporters of
  // either era are met, so both spellings are taken at every opset.
  std::string mode = c.attributes().string("mode", c.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (std::find(std::begin(ir::kInterpolationModes), std::end(ir::kInterpolationModes), mode) ==
      std::end(ir::kInterpolationModes))
    c.attributes().fail("mode", "is '" + mode + "', which is not supported");
  const std::string padding = oneOf(c, "padding_mode", "zeros", ir::kGridPaddingModes);
  c.emit("grid_sample", {{"src", c.tensor(0)}, {"grid", c.tensor(1)}}, {{"dst", c.output(0)}},
         {stringParam("mode", mode), stringParam("padding_mode", padding),
          boolParam("align_corners", c.attributes().integer("align_corners", 0) != 0)});
}

// RoiAlign: opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel;
// opset 16 adds it, half_pixel by default.
void convertRoiAlign(Converter& c) {
  c.requireRank(0, {4});
  const std::string mode = c.attributes().string("mode", "avg");
  if (mode != "avg" && mode != "max") c.attributes().fail("mode", "is '" + mode + "'; expected avg or max");
  const std::string coordinates = c.attributes().string("coordinate_transformation_mode",
                                                        c.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel")
    c.attributes().fail("coordinate_transformation_mode",
                        "is '" + coordinates + "'; expected half_pixel or output_half_pixel");
  const int64_t height = c.attributes().integer("output_height", 1), width = c.attributes().integer("output_width", 1);
  if (height < 1) c.attributes().fail("output_height", "must be >= 1");
  if (width < 1) c.attributes().fail("output_width", "must be >= 1");
  const int64_t samplingRatio = c.attributes().integer("sampling_ratio", 0);
  if (samplingRatio < 0) c.attributes().fail("sampling_ratio", "must be >= 0 (0: adaptive)");
  const double spatialScale = c.attributes().number("spatial_scale", 1.0f);
  if (!(spatialScale > 0) || !std::isfinite(spatialScale)) c.attributes().fail("spatial_scale", "must be > 0");
  c.emit("roi_align", {{"src", c.tensor(0)}, {"rois", c.tensor(1)}, {"batch_indices", c.tensor(2)}},
         {{"dst", c.output(0)}},
         {stringParam("mode", mode), integersParam("output_dims", {height, width}),
          numberParam("sampling_ratio", static_cast<double>(samplingRatio)), numberParam("spatial_scale", spatialScale),
          boolParam("half_pixel", coordinates == "half_pixel")});
}

}  // namespace qaic::onnx
