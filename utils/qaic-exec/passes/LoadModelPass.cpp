// SPDX-License-Identifier: Apache-2.0
// load-model: the network as loaded for the variant's symbol bindings; -batchsize also binds an
// ONNX model's symbolic batch dim.
#include "ModelLoader.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void loadModelPass(const Compilation& compilation, Variant& variant) {
  LoadOptions loadOptions;
  loadOptions.batchSize = compilation.options.batchSize;
  loadOptions.onnxSymbols = variant.onnxSymbols;
  variant.model = loadModel(compilation.options.model, loadOptions);
}

}  // namespace qaic::compiler
