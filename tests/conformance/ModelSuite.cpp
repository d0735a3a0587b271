// SPDX-License-Identifier: Apache-2.0
#include "ModelSuite.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "GeneratedData.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/OnnxTensor.hpp"

namespace qaic::conformance {
namespace {

std::string modelDir() { return buildDir() + "/tests/conformance/models"; }

// The index is named after the model list, so a change of the list regenerates.
std::string indexName() {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const auto& model : suiteModels()) {
    for (unsigned char ch : model + ",") hash = (hash ^ ch) * 0x100000001b3ull;
  }
  char name[40];
  std::snprintf(name, sizeof name, "index-%016llx.txt", static_cast<unsigned long long>(hash));
  return name;
}

void ensureModels() {
  std::vector<std::string> args = {"--index", indexName(), "--models"};
  args.insert(args.end(), suiteModels().begin(), suiteModels().end());
  ensureGenerated("gen-models.py", modelDir(), indexName(), std::chrono::seconds(900), args);
}

ir::DType dtypeOf(const std::string& name) {
  if (name == "float32") return ir::DType::Float;
  if (name == "int64") return ir::DType::Int64;
  if (name == "bool") return ir::DType::Bool;
  throw std::runtime_error("unknown dtype '" + name + "' in a model description");
}

std::vector<ModelTensor> tensors(const std::string& dir, const nlohmann::json& list) {
  std::vector<ModelTensor> out;
  for (const auto& entry : list) {
    const std::string path = dir + "/" + entry.at("file").get<std::string>();
    const ir::Dims dims = entry.at("dims").get<ir::Dims>();
    out.push_back({entry.at("name").get<std::string>(), readRawTensor(path, dtypeOf(entry.at("dtype")), dims), path});
  }
  return out;
}

}  // namespace

const std::vector<std::string>& suiteModels() {
  static const std::vector<std::string> models = {"alexnet",
                                                  "vgg_bn",
                                                  "resnet",
                                                  "resnext",
                                                  "wide_resnet",
                                                  "densenet",
                                                  "googlenet",
                                                  "inception_v3",
                                                  "squeezenet",
                                                  "mobilenet_v2",
                                                  "mobilenet_v3_large",
                                                  "mobilenet_v3_small",
                                                  "mnasnet",
                                                  "shufflenet_v2",
                                                  "efficientnet",
                                                  "efficientnet_v2",
                                                  "regnet_x",
                                                  "regnet_y",
                                                  "convnext",
                                                  "convnext_opset17",
                                                  "vit",
                                                  "vit_opset17",
                                                  "swin",
                                                  "maxvit",
                                                  "bert",
                                                  "bert_relu_opset17",
                                                  "gpt",
                                                  "gpt_opset17",
                                                  "decoder_relu",
                                                  "decoder_gelu",
                                                  "attention_masks",
                                                  "conv1d",
                                                  "norms_pixel_shuffle",
                                                  "positions_topk",
                                                  "modules_as_functions",
                                                  "recurrent",
                                                  "masking_one_hot",
                                                  "local_response_norm",
                                                  "video_r2plus1d",
                                                  "volumes",
                                                  "fake_quantized",
                                                  "spatial_transformer",
                                                  "roi_heads"};
  return models;
}

SuiteModel loadSuiteModel(const std::string& name) {
  ensureModels();
  return loadModel(modelDir(), name);
}

SuiteModel loadModel(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name + ".json");
  if (!in) throw std::runtime_error("no description of model '" + name + "' in " + dir);
  const nlohmann::json meta = nlohmann::json::parse(in);
  SuiteModel model;
  model.name = name;
  model.onnxPath = dir + "/" + name + ".onnx";
  model.opset = meta.at("opset").get<int>();
  model.inputs = tensors(dir, meta.at("inputs"));
  model.outputs = tensors(dir, meta.at("outputs"));
  return model;
}

onnx::ImportedTensor readRawTensor(const std::string& path, ir::DType dtype, const ir::Dims& dims) {
  const std::string bytes = onnx::readFileBounded(path, std::size_t{1} << 30);
  onnx::ImportedTensor t{path, dtype, dims, {}};
  const std::size_t expected = static_cast<std::size_t>(ir::elementCount(dims)) * ir::dtypeSize(dtype);
  if (bytes.size() != expected) {
    throw std::runtime_error(path + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                             std::to_string(expected));
  }
  t.data.resize(bytes.size());
  std::memcpy(t.data.mutableData(), bytes.data(), bytes.size());
  return t;
}

std::string compareWithTorch(const onnx::ImportedTensor& got, const onnx::ImportedTensor& expected,
                             const std::string& what) {
  if (got.dtype != expected.dtype) {
    return what + ": element type " + std::string(ir::dtypeName(got.dtype)) + ", PyTorch's is " +
           std::string(ir::dtypeName(expected.dtype));
  }
  const auto a = onnx::toDoubles(got), b = onnx::toDoubles(expected);
  if (a.size() != b.size()) {
    return what + ": " + std::to_string(a.size()) + " elements, PyTorch's has " + std::to_string(b.size());
  }
  const bool exact = got.dtype != ir::DType::Float;
  double maxRef = 0, maxErr = 0;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    maxRef = std::max(maxRef, std::abs(b[i]));
    const double err = std::abs(a[i] - b[i]);
    if (!(err <= maxErr)) {  // NaN counts as the worst
      maxErr = std::isnan(err) ? INFINITY : err;
      worst = i;
    }
  }
  if (exact ? maxErr == 0 : maxErr <= 1e-4 * maxRef) return "";
  std::ostringstream problem;
  problem << what << ": max |got - torch| = " << maxErr << " at " << worst << " (got " << a[worst] << ", torch "
          << b[worst] << "), max |torch| = " << maxRef;
  return problem.str();
}

}  // namespace qaic::conformance
