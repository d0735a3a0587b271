// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an ONNX model. importOnnxBytes may only throw
// ImportError; a model that imports must be valid IR that survives the JSON round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ir/Graph.hpp"
#include "onnx/OnnxImporter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qaic::onnx::ImportOptions options;
  options.batchSize = 2;  // resolves a symbolic batch dim, so more inputs reach the operators
  qaic::onnx::ImportedModel model;
  try {
    model = qaic::onnx::importOnnxBytes(std::as_bytes(std::span(data, size)), options, "fuzz.onnx");
  } catch (const qaic::onnx::ImportError&) {
    return 0;
  }
  try {
    qaic::ir::Graph again = qaic::ir::parseGraph(qaic::ir::toJson(model.graph), "fuzz.json");
    qaic::ir::inferShapes(again);
  } catch (const qaic::ir::IrError&) {
    std::abort();  // the importer produced IR the IR library rejects
  }
  for (const auto& w : model.weights) {
    if (w.data.size() != static_cast<std::size_t>(qaic::ir::elementCount(w.dims)) * qaic::ir::dtypeSize(w.dtype)) {
      std::abort();  // a weight whose bytes disagree with its dims
    }
  }
  return 0;
}
