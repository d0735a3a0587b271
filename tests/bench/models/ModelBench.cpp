// Host-executor latency of torchvision models, batch 1. QAIC_MODEL_DIR (default: the build
// tree's generated models) and QAIC_BENCH_THREADS (default 1) select data and thread count.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "HostRun.hpp"
#include "onnx/OnnxTensor.hpp"

namespace {

using qaic::conformance::HostRun;
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
  const std::string path = modelDir() + "/" + name + ".onnx";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("missing " + path + "; run scripts/bench-models.sh").c_str());
    return;
  }
  const onnx::ImportedModel model = onnx::importOnnxFile(path);
  onnx::ImportedTensor input{"input", qaic::ir::DType::Float, model.graph.io.at(0).dims, {}};
  input.data.resize(static_cast<std::size_t>(qaic::ir::elementCount(input.dims)) * sizeof(float));
  for (std::size_t i = 0; i < input.data.size(); i += sizeof(float)) {
    const float v = static_cast<float>(i % 255) / 255.0f - 0.5f;  // finite, image-like values
    std::memcpy(input.data.data() + i, &v, sizeof v);
  }
  HostRun program(model, threads());
  program.run({&input});  // warm-up: first-run allocations stay out of the timing
  for (auto _ : state) {
    auto outputs = program.run({&input});
    benchmark::DoNotOptimize(outputs.data());
  }
  state.counters["threads"] = threads();
}

void BM_ResNet18(benchmark::State& state) { runModel(state, "resnet18"); }
void BM_MobileNetV2(benchmark::State& state) { runModel(state, "mobilenet_v2"); }

BENCHMARK(BM_ResNet18)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_MobileNetV2)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
