// SPDX-License-Identifier: Apache-2.0
// The PyTorch model suite (ModelSuite.hpp) through the device, as a user runs it: qaic-exec
// compiles the ONNX file, qaic-runner runs it on a real qaic-emu (one per suite, on a temporary
// root) with PyTorch's inputs as raw files (int64 token ids and masks included), and the output
// files must match PyTorch: max |got - torch| <= 1e-4 * max |torch|.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "ModelSuite.hpp"
#include "Process.hpp"
#include "TempDir.hpp"
#include "driver/SysfsNames.hpp"
#include "onnx/ConstantMath.hpp"

namespace qaic::conformance {
namespace {

namespace fs = std::filesystem;
using qaic::testing::runCompiler;
using qaic::testing::runTool;

class PyTorchModelsOnDevice : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator_ = new qaic::testing::EmulatorProcess();
    ::setenv("QAIC_ROOT", emulator_->rootPath().c_str(), 1);
    workDir_ = new qaic::testing::TempDir("qaic-model-device");
    work_ = &workDir_->path();
  }
  static void TearDownTestSuite() {
    delete emulator_;
    emulator_ = nullptr;
    delete workDir_;
    workDir_ = nullptr;
    work_ = nullptr;
  }

  // qaic-exec compiles the model into `dir` (with `options`), qaic-runner runs it once with
  // PyTorch's inputs and writes its outputs into dir/out, which is returned.
  static fs::path compileAndRun(const SuiteModel& model, const fs::path& dir, const std::vector<std::string>& options) {
    const auto compiled = runCompiler(model.onnxPath, dir, options, std::chrono::seconds(300));
    EXPECT_EQ(compiled.exitCode, 0) << compiled.err;
    std::vector<std::string> args = {"-t", dir.string(), "-n", "1", "--write-output-dir", (dir / "out").string()};
    for (const auto& input : model.inputs) args.insert(args.end(), {"-i", input.path});
    const auto ran = runTool("qaic-runner", args, std::chrono::seconds(300));
    EXPECT_EQ(ran.exitCode, 0) << ran.out << ran.err << "\nemulator log:\n" << emulator_->log();
    return dir / "out";
  }

  inline static qaic::testing::EmulatorProcess* emulator_ = nullptr;
  inline static qaic::testing::TempDir* workDir_ = nullptr;
  inline static const fs::path* work_ = nullptr;
};

TEST_P(PyTorchModelsOnDevice, MatchPyTorchThroughQaicRunner) {
  const SuiteModel model = loadSuiteModel(GetParam());
  const fs::path dir = *work_ / GetParam();
  const fs::path out = compileAndRun(model, dir, {});
  if (HasFailure()) return;
  for (const auto& expected : model.outputs) {
    const fs::path file = out / (expected.name + "-inf-0.bin");
    ASSERT_TRUE(fs::exists(file)) << file;
    const auto got = readRawTensor(file.string(), expected.value.dtype, expected.value.dims);
    EXPECT_EQ(compareWithTorch(got, expected.value, "output '" + expected.name + "'"), "")
        << GetParam() << " (opset " << model.opset << ")";
  }
  fs::remove_all(dir);
}

// Indices are runtime data: one out of range fails that inference with a device error naming the
// op and the index, and the device goes on serving the next one.
class DeviceIndexErrors : public PyTorchModelsOnDevice {
 protected:
  // A network looking up rows of a constant [4, 3] table (gather) and scattering into a
  // constant [4] vector (scatter_elements), both at int64 indices the caller gives.
  static constexpr const char* kNetwork = R"({
  "ops": [
    {"name": "table", "optype": "create", "tensors_in": [], "tensors_out": [{"arg_name": "dst", "name": "table"}],
     "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": [4, 3]},
                {"arg_name": "ran", "value": [0, 0]}, {"arg_name": "from_file", "value": false},
                {"arg_name": "data", "value": [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]}]},
    {"name": "lookup", "optype": "gather",
     "tensors_in": [{"arg_name": "src", "name": "table"}, {"arg_name": "indices", "name": "rows"}],
     "tensors_out": [{"arg_name": "dst", "name": "picked"}], "params": [{"arg_name": "axis", "value": 0}]},
    {"name": "base", "optype": "zeros", "tensors_in": [], "tensors_out": [{"arg_name": "dst", "name": "base"}],
     "params": [{"arg_name": "dtype", "value": "TL_INT64"}, {"arg_name": "dims", "value": [4]}]},
    {"name": "marks", "optype": "scatter_elements",
     "tensors_in": [{"arg_name": "src", "name": "base"}, {"arg_name": "indices", "name": "slots"},
                    {"arg_name": "updates", "name": "slots"}],
     "tensors_out": [{"arg_name": "dst", "name": "marked"}],
     "params": [{"arg_name": "axis", "value": 0}, {"arg_name": "reduction", "value": "none"}]}
  ],
  "io": [
    {"name": "rows", "tensor": "rows", "direction": "in", "dtype": "TL_INT64", "dims": [2]},
    {"name": "slots", "tensor": "slots", "direction": "in", "dtype": "TL_INT64", "dims": [2]},
    {"name": "picked", "tensor": "picked", "direction": "out", "dtype": "TL_FLOAT", "dims": [2, 3]},
    {"name": "marked", "tensor": "marked", "direction": "out", "dtype": "TL_INT64", "dims": [4]}
  ]
})";

  static fs::path writeIndices(const fs::path& path, std::vector<int64_t> values) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 8));
    return path;
  }
};

TEST_F(DeviceIndexErrors, OutOfRangeIndexFailsThatInferenceNamingOpAndIndex) {
  const fs::path dir = *work_ / "index-errors";
  fs::create_directories(dir);
  std::ofstream(dir / "net.json") << kNetwork;
  const auto compiled = runCompiler(dir / "net.json", dir / "qpc");
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  const auto run = [&](const fs::path& rows, const fs::path& slots) {
    return runTool("qaic-runner", {"-t", (dir / "qpc").string(), "-i", rows.string(), "-i", slots.string(), "-n", "1",
                                   "--write-output-dir", (dir / "out").string()});
  };
  const fs::path goodRows = writeIndices(dir / "good-rows.bin", {3, -4});
  const fs::path goodSlots = writeIndices(dir / "good-slots.bin", {2, 1});

  const auto badGather = run(writeIndices(dir / "bad-rows.bin", {1, 7}), goodSlots);
  EXPECT_EQ(badGather.exitCode, 1) << badGather.out << badGather.err;
  EXPECT_NE(badGather.err.find("QS_DEVICE_ERROR"), std::string::npos) << badGather.err;
  EXPECT_NE(badGather.err.find("op 'lookup' (gather)"), std::string::npos) << badGather.err;
  EXPECT_NE(badGather.err.find("index 7 at position 1"), std::string::npos) << badGather.err;

  const auto badScatter = run(goodRows, writeIndices(dir / "bad-slots.bin", {-5, 0}));
  EXPECT_EQ(badScatter.exitCode, 1) << badScatter.out << badScatter.err;
  EXPECT_NE(badScatter.err.find("op 'marks' (scatter_elements)"), std::string::npos) << badScatter.err;
  EXPECT_NE(badScatter.err.find("index -5 at position 0"), std::string::npos) << badScatter.err;

  // The same activation path serves the next request: rows 3 and -4 (= 0), slots 2 and 1.
  const auto good = run(goodRows, goodSlots);
  ASSERT_EQ(good.exitCode, 0) << good.out << good.err << emulator_->log();
  const auto picked = readRawTensor((dir / "out" / "picked-inf-0.bin").string(), ir::DType::Float, {2, 3});
  const auto marked = readRawTensor((dir / "out" / "marked-inf-0.bin").string(), ir::DType::Int64, {4});
  EXPECT_EQ(compareWithTorch(picked, onnx::fromDoubles("", ir::DType::Float, {2, 3}, {30, 31, 32, 0, 1, 2}), "picked"),
            "");
  EXPECT_EQ(compareWithTorch(marked, onnx::fromInt64s("", ir::DType::Int64, {4}, {0, 1, 2, 0}), "marked"), "");
}

INSTANTIATE_TEST_SUITE_P(Suite, PyTorchModelsOnDevice, ::testing::ValuesIn(suiteModels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

std::string fileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Compiled for two NSPs the network computes on two host threads of the emulator
// (docs/emulator.md): still PyTorch's result, and bit for bit the one-NSP program's (the kernels
// split these networks' work by output, never inside a sum).
class TwoNspModels : public PyTorchModelsOnDevice {};

TEST_P(TwoNspModels, MatchPyTorchAndTheOneNspProgramBitForBit) {
  const SuiteModel model = loadSuiteModel(GetParam());
  std::map<int, fs::path> outDirs;
  for (int cores : {1, 2}) {
    const fs::path dir = *work_ / (GetParam() + "-nsp" + std::to_string(cores));
    outDirs[cores] = compileAndRun(model, dir, {"-aic-num-cores=" + std::to_string(cores)});
    if (HasFailure()) return;
  }
  for (const auto& expected : model.outputs) {
    const std::string file = expected.name + "-inf-0.bin";
    const auto got = readRawTensor((outDirs[2] / file).string(), expected.value.dtype, expected.value.dims);
    EXPECT_EQ(compareWithTorch(got, expected.value, "output '" + expected.name + "'"), "") << GetParam();
    const std::string one = fileBytes(outDirs[1] / file), two = fileBytes(outDirs[2] / file);
    EXPECT_FALSE(one.empty());
    EXPECT_TRUE(one == two) << GetParam() << ": output '" << expected.name << "' differs between 1 and 2 NSPs";
  }
  // The two-NSP run held two of the pool's threads (or all of a one-CPU pool).
  const int pool = std::stoi(emulator_->attribute(0, driver::sysfs::kEmuComputeThreads));
  EXPECT_EQ(std::stoi(emulator_->attribute(0, driver::sysfs::kEmuComputeBusyMax)), std::min(2, pool));
  for (const auto& [cores, dir] : outDirs) fs::remove_all(dir.parent_path());
}

INSTANTIATE_TEST_SUITE_P(Suite, TwoNspModels, ::testing::Values("resnet", "densenet", "efficientnet"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
