// SPDX-License-Identifier: Apache-2.0
// Seed 003 on real networks: suite models (ModelSuite.hpp) compiled by qaic-exec
// -convert-to-fp16 (FP16 DWHC or DHWC image inputs, FP16 weights, FP32 accumulation), checked by
// qaic-util --qpc, run by qaic-runner on a real qaic-emu and compared with PyTorch within an FP16
// tolerance.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "ModelSuite.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "onnx/ConstantMath.hpp"

namespace qaic::conformance {
namespace {

namespace fs = std::filesystem;
using qaic::testing::runCompiler;
using qaic::testing::runTool;

// FP16 inputs and weights, FP32 accumulation and activations: a few units of FP16's 2^-11
// relative step through the network's layers. The tolerance issue 27 states: 2e-2 of the range.
constexpr double kFp16Tolerance = 2e-2;

double relativeMaxError(const onnx::ImportedTensor& got, const onnx::ImportedTensor& expected) {
  const auto a = onnx::toDoubles(got), b = onnx::toDoubles(expected);
  if (a.size() != b.size()) return INFINITY;
  double maxRef = 0, maxErr = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    maxRef = std::max(maxRef, std::abs(b[i]));
    const double err = std::abs(a[i] - b[i]);
    maxErr = std::isnan(err) ? INFINITY : std::max(maxErr, err);
  }
  return maxRef > 0 ? maxErr / maxRef : INFINITY;
}

std::string dimsText(const ir::Dims& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

// Compiles `name` with -convert-to-fp16 [-fp16-io-layout=layout] on a fresh qaic-emu, checks that
// qaic-util --qpc shows the input in `inputFormat` and the output in `outputFormat`, runs it once
// on PyTorch's input and returns the error of its single output relative to PyTorch's range.
double runFp16(const std::string& name, const std::string& layout, const std::string& inputFormat,
               const std::string& outputFormat = "flat TL_FLOAT") {
  const SuiteModel model = loadSuiteModel(name);
  EXPECT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.outputs.size(), 1u);
  if (model.inputs.size() != 1 || model.outputs.size() != 1) return INFINITY;
  qaic::testing::EmulatorProcess emulator;
  ::setenv("QAIC_ROOT", emulator.rootPath().c_str(), 1);
  qaic::testing::TempDir dir("fp16-" + name);
  const std::string qpc = (dir.path() / "qpc").string();
  std::vector<std::string> options = {"-convert-to-fp16"};
  if (!layout.empty()) options.push_back("-fp16-io-layout=" + layout);
  auto r = runCompiler(model.onnxPath, qpc, options, std::chrono::seconds(240));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = runTool("qaic-util", {"--qpc=" + qpc});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // Each buffer's block: Dims, Size, Partial, Skip Partial Header, Allow Skip, Device Format.
  auto formatOf = [&](const ir::Dims& dims) {
    const auto at = r.out.find("\tDims:" + dimsText(dims) + "\n");
    if (at == std::string::npos) return std::string("(no buffer of dims " + dimsText(dims) + ")");
    const auto format = r.out.find("\tDevice Format:", at);
    if (format == std::string::npos) return std::string("(no device format)");
    const auto begin = format + std::string("\tDevice Format:").size();
    return r.out.substr(begin, r.out.find('\n', begin) - begin);
  };
  EXPECT_EQ(formatOf(model.inputs[0].value.dims), inputFormat) << r.out;
  EXPECT_EQ(formatOf(model.outputs[0].value.dims), outputFormat) << r.out;
  const fs::path out = dir.path() / "out";
  r = runTool("qaic-runner", {"-t", qpc, "-i", model.inputs[0].path, "-n", "1", "--write-output-dir", out.string()},
              std::chrono::seconds(240));
  EXPECT_EQ(r.exitCode, 0) << r.err << r.out << "\nemulator log:\n" << emulator.log();
  const auto& expected = model.outputs[0];
  const fs::path file = out / (expected.name + "-inf-0.bin");
  EXPECT_TRUE(fs::exists(file)) << file;
  if (!fs::exists(file)) return INFINITY;
  return relativeMaxError(readRawTensor(file.string(), expected.value.dtype, expected.value.dims), expected.value);
}

class Fp16Models : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp16Models, MatchPyTorchThroughTheRunnerInDwhc) {
  const double error = runFp16(GetParam(), "", "DWHC TL_FLOAT16");
  EXPECT_LE(error, kFp16Tolerance) << GetParam();
  std::cout << GetParam() << " (fp16, DWHC, qaic-runner on qaic-emu): max abs error / max |torch| = " << error << "\n";
  RecordProperty("relative_max_error", std::to_string(error));
}

// The transposed layout gives the same network the same results.
TEST(Fp16Layouts, DhwcInputMatchesPyTorch) {
  const double error = runFp16("squeezenet", "DHWC", "DHWC TL_FLOAT16");
  EXPECT_LE(error, kFp16Tolerance);
  std::cout << "squeezenet (fp16, DHWC): max abs error / max |torch| = " << error << "\n";
}

// Seed 003's "1D ... arrays with multiple channels": a torch.nn.Conv1d network's [N, C, L] input
// (20 channels: three chunks of 8) lives on the device in DWHC / DHWC float16 as [N, C, 1, L], and
// its [N, C, L] convolution output comes back from DWHC / DHWC float.
class Conv1dFp16Layouts : public ::testing::TestWithParam<std::string> {};

TEST_P(Conv1dFp16Layouts, ChannelsOverLengthMatchPyTorch) {
  const std::string layout = GetParam();
  const double error = runFp16("conv1d", layout, layout + " TL_FLOAT16", layout + " TL_FLOAT");
  EXPECT_LE(error, kFp16Tolerance);
  std::cout << "conv1d (fp16, " << layout << "): max abs error / max |torch| = " << error << "\n";
  RecordProperty("relative_max_error", std::to_string(error));
}

INSTANTIATE_TEST_SUITE_P(Conv1d, Conv1dFp16Layouts, ::testing::Values("DWHC", "DHWC"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Suite, Fp16Models, ::testing::Values("resnet", "mobilenet_v2", "squeezenet"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
