// SPDX-License-Identifier: Apache-2.0
// The suite's models big enough to split (ModelSuite.hpp: the transformers, the CNNs), as a
// user deploys them on several cards (issue 37): qaic-exec compiles each once for one card and
// once with the partition config efficient-transformers writes for 2 and for 4 cards, and
// qaic-runner runs each on a real qaic-emu of four cards (-d per card). Split, each output must
// match PyTorch as the suite holds every model (max |got - torch| <= 1e-4 * max |torch|) and the
// single-card program's output within the same bound. Tensor slicing divides the MatMul/Gemm and
// the Conv weights: the transformers check that their weights were divided, attention by heads
// (nn.MultiheadAttention's [L, N*H, D] layout included) and the MLP by hidden units, the ResNets
// and EfficientNets that their convs were and each card holds about its share of the weights;
// DenseNet divides some convs, and ConvNeXt and ViT keep their convs whole (a layernorm over the
// channels reads each) while their linears divide.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

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

constexpr int kCards = 4;

// What tensor slicing does with a model's convs.
enum class Convs {
  None,     // it has none
  Divided,  // divided: each card holds at most 1.1 / cards of the one-card weight bytes
  Some,     // some divided (each card holds less than the one-card weight bytes)
  Whole,    // every one stays whole (the linears still divide)
};

struct SplitCase {
  std::string model;
  Convs convs = Convs::None;
};

// ViT's patch embedding, a conv whose output channels are the tokens' features, stays whole; its
// linears divide (over 4 cards its 2 heads do not, so q, k and v are gathered for attention).
const SplitCase kCases[] = {{"bert"},
                            {"bert_relu_opset17"},
                            {"gpt"},
                            {"gpt_opset17"},
                            {"decoder_relu"},
                            {"decoder_gelu"},
                            {"attention_masks"},
                            {"resnet", Convs::Divided},
                            {"wide_resnet", Convs::Divided},
                            {"resnext", Convs::Divided},
                            {"efficientnet", Convs::Divided},
                            {"efficientnet_v2", Convs::Divided},
                            {"densenet", Convs::Some},
                            {"convnext", Convs::Whole},
                            {"vit", Convs::Whole},
                            {"vit_opset17", Convs::Whole}};

void PrintTo(const SplitCase& c, std::ostream* out) { *out << c.model; }

// The file efficient-transformers writes for compile(num_devices=devices).
std::string partitionConfig(int devices) {
  std::string ids, entries;
  for (int d = 0; d < devices; ++d) {
    ids += (d ? "," : "") + std::to_string(d);
    entries += std::string(d ? "," : "") + R"({"deviceId":)" + std::to_string(d) + R"(,"numCores":1})";
  }
  return R"({"connections":[{"devices":[)" + ids + R"(],"type":"p2p"}],"partitions":[{"name":"Partition0",)" +
         R"("devices":[)" + entries + "]}]}";
}

double maxDifference(const onnx::ImportedTensor& a, const onnx::ImportedTensor& b) {
  const auto x = onnx::toDoubles(a), y = onnx::toDoubles(b);
  double worst = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

// The number after `label` in qaic-exec's output (its first line: "... constants (N bytes) ...").
uint64_t numberAfter(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  if (at == std::string::npos) return 0;
  return std::stoull(out.substr(at + label.size()));
}

// Each card's weight bytes from qaic-exec -v's slicing report ("part 1: N weight bytes").
std::vector<uint64_t> weightBytesByCard(const std::string& out, int devices) {
  std::vector<uint64_t> bytes;
  for (int d = 0; d < devices; ++d) bytes.push_back(numberAfter(out, "\npart " + std::to_string(d) + ": "));
  return bytes;
}

double maxMagnitude(const onnx::ImportedTensor& t) {
  double largest = 0;
  for (double v : onnx::toDoubles(t)) largest = std::max(largest, std::fabs(v));
  return largest;
}

class SuiteModelsOverCards : public ::testing::TestWithParam<SplitCase> {
 protected:
  static void SetUpTestSuite() {
    emulator_ = new qaic::testing::EmulatorProcess(qaic::testing::EmulatorOptions{
        .config = {}, .arguments = {"--devices", std::to_string(kCards)}, .root = {}, .foreground = false});
    ::setenv("QAIC_ROOT", emulator_->rootPath().c_str(), 1);
    workDir_ = new qaic::testing::TempDir("qaic-model-cards");
  }
  static void TearDownTestSuite() {
    delete emulator_;
    emulator_ = nullptr;
    delete workDir_;
    workDir_ = nullptr;
  }

  // Compiles for `devices` cards (1: no partition config) into `dir` and runs once on cards
  // 0..devices-1; returns qaic-exec's slicing report (-v).
  static std::string compileAndRun(const SuiteModel& model, const fs::path& dir, int devices) {
    std::vector<std::string> options = {"-v"};
    if (devices > 1) {
      const fs::path config = dir.string() + ".mdp.json";
      fs::create_directories(dir.parent_path());
      std::ofstream(config) << partitionConfig(devices);
      options.push_back("-mdp-load-partition-config=" + config.string());
    }
    const auto compiled = runCompiler(model.onnxPath, dir, options, std::chrono::seconds(300));
    EXPECT_EQ(compiled.exitCode, 0) << compiled.err;
    std::vector<std::string> args = {"-t", dir.string(), "-n", "1", "--write-output-dir", (dir / "out").string()};
    for (int d = 0; d < devices; ++d) args.insert(args.end(), {"-d", std::to_string(d)});
    for (const auto& input : model.inputs) args.insert(args.end(), {"-i", input.path});
    const auto ran = runTool("qaic-runner", args, std::chrono::seconds(300));
    EXPECT_EQ(ran.exitCode, 0) << ran.out << ran.err << "\nemulator log:\n" << emulator_->log();
    return compiled.out;
  }

  inline static qaic::testing::EmulatorProcess* emulator_ = nullptr;
  inline static qaic::testing::TempDir* workDir_ = nullptr;
};

TEST_P(SuiteModelsOverCards, SplitOverTwoAndFourCardsGiveTheOneCardResult) {
  const SplitCase& c = GetParam();
  const SuiteModel model = loadSuiteModel(c.model);
  const fs::path base = workDir_->path() / c.model;
  const uint64_t oneCardBytes = numberAfter(compileAndRun(model, base / "cards1", 1), "constants (");
  if (HasFailure()) return;
  for (int devices : {2, kCards}) {
    const fs::path dir = base / ("cards" + std::to_string(devices));
    const std::string report = compileAndRun(model, dir, devices);
    if (HasFailure()) return;
    const bool convsSplit = report.find("split: conv") != std::string::npos;
    if (c.convs == Convs::Divided || c.convs == Convs::Some) {
      EXPECT_TRUE(convsSplit) << c.model << " split no conv:\n" << report;
      for (uint64_t bytes : weightBytesByCard(report, devices)) {
        EXPECT_GT(bytes, 0u) << c.model << ": no weight bytes reported:\n" << report;
        EXPECT_LT(bytes, oneCardBytes) << c.model << ":\n" << report;
        if (c.convs == Convs::Divided) {
          EXPECT_LE(double(bytes), 1.1 * double(oneCardBytes) / devices) << c.model << ":\n" << report;
        }
      }
    } else {
      EXPECT_FALSE(convsSplit) << report;
      EXPECT_NE(report.find("column split"), std::string::npos) << c.model << " split no weight:\n" << report;
      // Attention divides by heads and the MLP by hidden units, one sum each: nothing is made
      // whole for a replicated op but an output.
      std::istringstream lines(c.convs == Convs::None ? report : std::string());
      for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("replicated: '")) continue;
        const std::string tensor = line.substr(13, line.find('\'', 13) - 13);
        const bool output = std::any_of(model.outputs.begin(), model.outputs.end(),
                                        [&](const auto& o) { return o.name == tensor; });
        EXPECT_TRUE(output) << c.model << " over " << devices << " cards: " << line;
      }
    }
    for (const auto& expected : model.outputs) {
      const std::string file = expected.name + "-inf-0.bin";
      const auto split = readRawTensor((dir / "out" / file).string(), expected.value.dtype, expected.value.dims);
      const auto single = readRawTensor((base / "cards1" / "out" / file).string(), expected.value.dtype,
                                        expected.value.dims);
      const std::string what = "output '" + expected.name + "' over " + std::to_string(devices) + " cards";
      EXPECT_EQ(compareWithTorch(split, expected.value, what), "") << c.model;
      const double fromSingle = maxDifference(split, single), bound = 1e-4 * maxMagnitude(expected.value);
      EXPECT_LE(fromSingle, bound) << c.model << ": " << what << " differs from the one-card output";
      // The figures for the record: the split's distance from the one-card output and PyTorch's.
      std::cout << c.model << " " << what << ": max |split - one card| " << fromSingle << ", max |split - torch| "
                << maxDifference(split, expected.value) << ", max |torch| " << maxMagnitude(expected.value) << "\n";
    }
  }
  fs::remove_all(base);
}

INSTANTIATE_TEST_SUITE_P(Suite, SuiteModelsOverCards, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<SplitCase>& info) { return info.param.model; });

}  // namespace
}  // namespace qaic::conformance
