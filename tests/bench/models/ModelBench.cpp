// SPDX-License-Identifier: Apache-2.0
// Host-executor latency of full-size networks with PyTorch's inputs (scripts/gen-models.py writes
// them; scripts/bench-models.sh measures PyTorch on the same inputs in the same run and prints
// the ratios). QAIC_MODEL_DIR (default: the build tree's bench models) and QAIC_BENCH_THREADS
// (default 1) select the data and the thread count. Each row also checks the result against
// PyTorch's, so a fast wrong answer is an error, not a figure.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "HostRun.hpp"
#include "ModelSuite.hpp"

namespace {

using namespace qaic::conformance;
namespace onnx = qaic::onnx;

std::string modelDir() {
  const char* dir = std::getenv("QAIC_MODEL_DIR");
  return dir && *dir ? dir : QAIC_DEFAULT_MODEL_DIR;
}

int threads() {
  const char* value = std::getenv("QAIC_BENCH_THREADS");
  const int n = value ? std::atoi(value) : 1;
  return n > 0 ? n : 1;
}

void runModel(benchmark::State& state, const std::string& name) {
  if (!std::filesystem::exists(modelDir() + "/" + name + ".json")) {
    state.SkipWithError(("missing " + modelDir() + "/" + name + ".json; run scripts/bench-models.sh").c_str());
    return;
  }
  const SuiteModel model = loadModel(modelDir(), name);
  const onnx::ImportedModel imported = onnx::importOnnxFile(model.onnxPath);
  std::vector<const onnx::ImportedTensor*> inputs;
  for (const auto& input : model.inputs) inputs.push_back(&input.value);
  HostRun program(imported, threads());
  const auto first = program.run(inputs);  // warm-up: first-run allocations stay out of the timing
  for (std::size_t i = 0; i < first.size(); ++i) {
    const std::string problem = compareWithTorch(first[i], model.outputs[i].value, "output " + std::to_string(i));
    if (!problem.empty()) {
      state.SkipWithError((name + ": " + problem).c_str());
      return;
    }
  }
  for (auto _ : state) {
    auto outputs = program.run(inputs);
    benchmark::DoNotOptimize(outputs.data());
  }
  state.counters["threads"] = threads();
}

// Each row is named after its model, so scripts select and read rows by the model's name.
#define QAIC_MODEL_BENCH(function, model)                            \
  void function(benchmark::State& state) { runModel(state, model); } \
  BENCHMARK(function)->Name(model)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

QAIC_MODEL_BENCH(BM_ResNet50, "resnet50_full")
QAIC_MODEL_BENCH(BM_MobileNetV3Large, "mobilenet_v3_large_full")
QAIC_MODEL_BENCH(BM_ConvNeXtTiny, "convnext_tiny_full")
QAIC_MODEL_BENCH(BM_BertBase4Layers, "bert_base_full")
QAIC_MODEL_BENCH(BM_ResNet18, "resnet18_full")
QAIC_MODEL_BENCH(BM_MobileNetV2, "mobilenet_v2_full")
QAIC_MODEL_BENCH(BM_DenseNet121, "densenet121_full")
QAIC_MODEL_BENCH(BM_EfficientNetB0, "efficientnet_b0_full")

}  // namespace

BENCHMARK_MAIN();
