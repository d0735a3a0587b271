// SPDX-License-Identifier: Apache-2.0
#include "ModelLoader.hpp"

#include "CompileError.hpp"

#ifdef QAIC_HAVE_ONNX
#include "onnx/OnnxImporter.hpp"
#endif

namespace qaic::compiler {

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool usesWeightsFile(const ir::Graph& graph) {
  for (const auto& op : graph.ops) {
    if (op.optype == "create" && op.boolean("from_file")) return true;
  }
  return false;
}

LoadedModel loadIr(const std::string& path) {
  LoadedModel model;
  model.graph = ir::loadGraph(path);
  const std::string weightsPath = ir::weightsPath(model.graph);
  if (weightsPath.empty()) {
    if (usesWeightsFile(model.graph)) {
      throw CompileError(path + ": create ops read from_file but the IR names no \"weights\" file");
    }
    return model;
  }
  std::shared_ptr<ir::WeightsFile> weights = ir::WeightsFile::open(weightsPath);
  ir::bindWeights(model.graph, *weights);
  model.weights = weights->tensors();
  model.owner = weights;
  return model;
}

}  // namespace

LoadedModel loadModel(const std::string& path, const LoadOptions& options) {
  if (!endsWith(path, ".onnx")) return loadIr(path);
#ifdef QAIC_HAVE_ONNX
  onnx::ImportOptions importOptions;
  importOptions.symbols = options.onnxSymbols;
  importOptions.batchSize = options.batchSize;
  auto imported = std::make_shared<onnx::ImportedModel>(onnx::importOnnxFile(path, importOptions));
  LoadedModel model;
  model.graph = imported->graph;
  model.weights = onnx::weightTensors(*imported);
  model.owner = imported;
  return model;
#else
  (void)options;
  throw CompileError(path + ": ONNX support not built (qaic_onnx is missing); compile the JSON IR instead");
#endif
}

}  // namespace qaic::compiler
