// SPDX-License-Identifier: Apache-2.0
// The signal-processing operators of opset 17: DFT and STFT, and the windows they take.
// A DFT of length L is a matrix product with constant cosines and sines: the signal's axis
// moved last with its real and imaginary parts interleaved ([rows, n * c], c = 1 for a real
// signal, 2 for a complex one), times a [n * c, m * 2] matrix whose columns are the output's
// interleaved parts (m = L, or L / 2 + 1 one-sided). Rows of samples past L are zero, which
// truncates the signal; a signal shorter than L is padded with zeros by having no rows there.
// STFT is the same product per frame: a conv2d over [batch, c, 1, length] whose kernels are the
// window times those columns, strided by frame_step. Windows (HannWindow, HammingWindow,
// BlackmanWindow) are import-time constants of their size.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <numbers>

#include "ir/ShapeRules.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

constexpr int64_t kMaxTransformLength = int64_t{1} << 16;
// The constant matrix (or kernels) of one transform: 64 MB of floats, a two-sided complex DFT of
// 2048 samples or a one-sided real one of 4096.
constexpr int64_t kMaxMatrixElements = int64_t{1} << 24;

void requireMatrixFits(Converter& c, int64_t samples, int parts, int64_t bins) {
  const int64_t elements = samples * parts * bins * 2;  // each factor <= 2^17: no overflow
  if (elements > kMaxMatrixElements) {
    c.fail("a transform of " + std::to_string(samples) + " samples into " + std::to_string(bins) +
           " bins needs a matrix of " + std::to_string(elements * 4 / (1 << 20)) + " MB; at most " +
           std::to_string(kMaxMatrixElements * 4 / (1 << 20)) + " MB is supported");
  }
}

// Coefficient of input sample t, part `in` (0 real, 1 imaginary), for output bin k, part `out`,
// of a DFT of length `length`, forward or inverse (the inverse scaled by 1 / length).
double coefficient(int64_t t, int in, int64_t k, int out, int64_t length, bool inverse) {
  const double angle = 2 * std::numbers::pi * static_cast<double>((t * k) % length) / static_cast<double>(length);
  const double cosine = std::cos(angle), sine = inverse ? std::sin(angle) : -std::sin(angle);
  // (xr + i xi)(cos + i sine): real part xr cos - xi sine, imaginary part xr sine + xi cos.
  const double value = out == 0 ? (in == 0 ? cosine : -sine) : (in == 0 ? sine : cosine);
  return inverse ? value / static_cast<double>(length) : value;
}

// The [samples * parts, bins * 2] matrix, each entry scaled by `window[t]` when given.
std::vector<double> transformMatrix(int64_t samples, int parts, int64_t bins, int64_t length, bool inverse,
                                    const std::vector<double>& window) {
  std::vector<double> m(static_cast<std::size_t>(samples * parts * bins * 2), 0.0);
  for (int64_t t = 0; t < std::min(samples, length); ++t) {
    const double scale = window.empty() ? 1.0 : window[static_cast<std::size_t>(t)];
    for (int in = 0; in < parts; ++in) {
      double* row = m.data() + static_cast<std::size_t>((t * parts + in) * bins * 2);
      for (int64_t k = 0; k < bins; ++k) {
        for (int out = 0; out < 2; ++out) row[k * 2 + out] = scale * coefficient(t, in, k, out, length, inverse);
      }
    }
  }
  return m;
}

int64_t optionalLength(Converter& c, std::size_t input, const std::string& role) {
  if (!c.hasInput(input)) return 0;
  const auto values = c.constantIntegers(input, role);
  if (values.size() != 1) c.fail("input '" + role + "' must hold one value");
  if (values[0] < 1 || values[0] > kMaxTransformLength)
    c.fail("input '" + role + "' is " + std::to_string(values[0]) + "; expected 1 to " +
           std::to_string(kMaxTransformLength));
  return values[0];
}

// The last axis of a signal holds its parts: 1 (real) or 2 (complex).
int partsOf(Converter& c, const ir::Dims& in) {
  if (in.size() < 3) c.fail("input must have rank >= 3 ([batch, samples..., 1 or 2])");
  if (in.back() != 1 && in.back() != 2) c.fail("the input's last dim must be 1 (real) or 2 (complex)");
  if (c.dtype(0) != ir::DType::Float) c.fail("only float signals are supported");
  return static_cast<int>(in.back());
}

}  // namespace

void convertDft(Converter& c) {
  const ir::Dims in = c.dims(0);
  const int parts = partsOf(c, in);
  const auto rank = static_cast<int64_t>(in.size());
  int64_t axis = c.attributes().integer("axis", 1);
  if (c.opset() >= 20) {
    axis = -2;
    if (c.hasInput(2)) {
      const auto given = c.constantIntegers(2, "axis");
      if (given.size() != 1) c.fail("input 'axis' must hold one value");
      axis = given[0];
    }
  }
  if (axis < 0) axis += rank;
  if (axis < 1 || axis > rank - 2) c.fail("axis " + std::to_string(axis) + " is not a signal axis");
  const bool inverse = c.attributes().integer("inverse", 0) != 0;
  const bool onesided = c.attributes().integer("onesided", 0) != 0;
  if (onesided && parts == 2) c.attributes().fail("onesided", "is 1 for a complex input");
  if (onesided && inverse) c.attributes().fail("onesided", "is 1 with inverse");
  const int64_t samples = in[static_cast<std::size_t>(axis)];
  const int64_t given = optionalLength(c, 1, "dft_length");
  const int64_t length = given != 0 ? given : samples;
  if (samples > kMaxTransformLength) c.fail("the signal axis is longer than " + std::to_string(kMaxTransformLength));
  const int64_t bins = onesided ? length / 2 + 1 : length;
  requireMatrixFits(c, samples, parts, bins);

  // [outer..., samples, parts] with the signal axis moved next to the parts.
  std::vector<int64_t> perm;
  ir::Dims moved;
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i == axis) continue;
    perm.push_back(i);
    moved.push_back(in[static_cast<std::size_t>(i)]);
  }
  perm.push_back(axis);
  perm.push_back(rank - 1);
  int64_t rows = 1;
  for (int64_t d : moved) rows *= d;
  std::string src = c.tensor(0);
  if (axis != rank - 2) {
    const std::string transposed = c.temporary("signal_last");
    c.emit("transpose", {{"src", src}}, {{"dst", transposed}}, {integersParam("axes", perm)});
    src = transposed;
  }
  const std::string flat = c.reshaped(src, {rows, samples * parts}, "signal_rows");
  const std::string matrix = c.constantTensor(fromDoubles("", ir::DType::Float, {samples * parts, bins * 2},
                                                          transformMatrix(samples, parts, bins, length, inverse, {})),
                                              c.label() + "/dft_matrix");
  const std::string product = c.temporary("spectrum_rows");
  c.emit("matmul", {{"src1", flat}, {"src2", matrix}}, {{"dst", product}});
  ir::Dims spectrumDims = moved;
  spectrumDims.push_back(bins);
  spectrumDims.push_back(2);
  if (axis == rank - 2) return c.reshapeInto(0, product, spectrumDims);
  const std::string spectrum = c.reshaped(product, spectrumDims, "spectrum");
  // Back: the bins to `axis`, the parts last.
  std::vector<int64_t> back;
  for (int64_t i = 0, from = 0; i < rank - 1; ++i) back.push_back(i == axis ? rank - 2 : from++);
  back.push_back(rank - 1);
  ir::Dims out = in;
  out[static_cast<std::size_t>(axis)] = bins;
  out.back() = 2;
  const std::string restored = c.temporary("spectrum_restored");
  c.emit("transpose", {{"src", spectrum}}, {{"dst", restored}}, {integersParam("axes", back)});
  c.reshapeInto(0, restored, out);
}

void convertStft(Converter& c) {
  const ir::Dims in = c.dims(0);
  const int parts = partsOf(c, in);
  if (in.size() != 3) c.fail("signal must be [batch, length, 1 or 2]");
  const auto steps = c.constantIntegers(1, "frame_step");
  if (steps.size() != 1 || steps[0] < 1) c.fail("input 'frame_step' must hold one value >= 1");
  std::vector<double> window;
  if (c.hasInput(2)) {
    if (irDims(c.dims(2)).size() != 1) c.fail("input 'window' must be 1-D");
    window = toDoubles(c.requireConstant(2, "window"));
  }
  int64_t frameLength = optionalLength(c, 3, "frame_length");
  if (frameLength == 0) frameLength = static_cast<int64_t>(window.size());
  if (frameLength == 0) c.fail("needs a window or a frame_length");
  if (!window.empty() && static_cast<int64_t>(window.size()) != frameLength)
    c.fail("the window has " + std::to_string(window.size()) + " values for frame_length " +
           std::to_string(frameLength));
  const int64_t batch = in[0], samples = in[1];
  if (frameLength > samples)
    c.fail("frame_length " + std::to_string(frameLength) + " exceeds the signal's " + std::to_string(samples) +
           " samples");
  const bool onesided = c.attributes().integer("onesided", 1) != 0;
  if (onesided && parts == 2) c.attributes().fail("onesided", "is 1 for a complex signal");
  const int64_t bins = onesided ? frameLength / 2 + 1 : frameLength;
  const int64_t frames = (samples - frameLength) / steps[0] + 1;
  requireMatrixFits(c, frameLength, parts, bins);

  // Kernels [bins * 2, parts, 1, frameLength]: kernel k * 2 + out, channel `in`, tap t.
  const std::vector<double> matrix = transformMatrix(frameLength, parts, bins, frameLength, false, window);
  std::vector<double> kernels(matrix.size());
  for (int64_t t = 0; t < frameLength; ++t) {
    for (int p = 0; p < parts; ++p) {
      for (int64_t j = 0; j < bins * 2; ++j) {
        kernels[static_cast<std::size_t>((j * parts + p) * frameLength + t)] =
            matrix[static_cast<std::size_t>((t * parts + p) * bins * 2 + j)];
      }
    }
  }
  const std::string weight = c.constantTensor(
      fromDoubles("", ir::DType::Float, {bins * 2, parts, 1, frameLength}, kernels), c.label() + "/stft_kernels");
  const std::string channels = c.temporary("signal_channels");
  c.emit("transpose", {{"src", c.tensor(0)}}, {{"dst", channels}}, {integersParam("axes", {0, 2, 1})});
  const std::string image = c.reshaped(channels, {batch, parts, 1, samples}, "signal_image");
  const std::string framesImage = c.temporary("frames_image");
  c.emit("conv2d", {{"src", image}, {"weight", weight}, {"bias", c.zeros(ir::DType::Float, {bins * 2}, "zero_bias")}},
         {{"dst", framesImage}},
         {numberParam("group", 1), integersParam("size", {1, frameLength}), integersParam("stride", {1, steps[0]}),
          integersParam("padding", {0, 0, 0, 0}), integersParam("dilation", {1, 1}), stringParam("autopad", "NOTSET")});
  const std::string byBin = c.reshaped(framesImage, {batch, bins * 2, frames}, "spectra");
  const std::string byFrame = c.temporary("spectra_by_frame");
  c.emit("transpose", {{"src", byBin}}, {{"dst", byFrame}}, {integersParam("axes", {0, 2, 1})});
  c.reshapeInto(0, byFrame, {batch, frames, bins, 2});
}

// HannWindow, HammingWindow, BlackmanWindow: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the
// size (periodic) or the size - 1 (symmetric).
bool foldWindow(Converter& c) {
  const std::string& op = c.node().op_type();
  const auto sizes = c.constantIntegers(0, "size");
  if (sizes.size() != 1 || sizes[0] < 1 || sizes[0] > kMaxTransformLength)
    c.fail("input 'size' must hold one value from 1 to " + std::to_string(kMaxTransformLength));
  const int64_t size = sizes[0];
  const auto dtype = dtypeFromOnnx(static_cast<int32_t>(c.attributes().integer("output_datatype", 1)));
  if (!dtype || !ir::rules::isFloating(*dtype)) c.attributes().fail("output_datatype", "must name a floating type");
  const bool periodic = c.attributes().integer("periodic", 1) != 0;
  const double a0 = op == "HannWindow" ? 0.5 : op == "HammingWindow" ? 25.0 / 46.0 : 0.42;
  const double a1 = op == "HannWindow" ? 0.5 : op == "HammingWindow" ? 21.0 / 46.0 : 0.5;
  const double a2 = op == "BlackmanWindow" ? 0.08 : 0.0;
  const double span = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> values(static_cast<std::size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double x = span > 0 ? 2 * std::numbers::pi * static_cast<double>(n) / span : 0.0;
    values[static_cast<std::size_t>(n)] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  c.setConstant(0, fromDoubles("", *dtype, {size}, values));
  return true;
}

}  // namespace qaic::onnx
