// SPDX-License-Identifier: Apache-2.0
// The PyTorch model suite (scripts/gen-models.py): every torchvision classification family at a
// reduced configuration plus transformers built from torch.nn, exported to ONNX at test time with
// PyTorch's outputs for fixed inputs, cached in the build tree.
#pragma once

#include <string>
#include <vector>

#include "onnx/OnnxImporter.hpp"

namespace qaic::conformance {

// The models of the suite (gen-models.py --list has them all, with what each covers).
const std::vector<std::string>& suiteModels();

struct ModelTensor {
  std::string name;
  onnx::ImportedTensor value;
  std::string path;  // the raw file
};

struct SuiteModel {
  std::string name;
  std::string onnxPath;
  int opset = 0;
  std::vector<ModelTensor> inputs;
  std::vector<ModelTensor> outputs;  // PyTorch's
};

// Generates the suite's models unless cached (one generation for parallel ctest processes), then
// reads model `name`'s description and data. Throws std::runtime_error.
SuiteModel loadSuiteModel(const std::string& name);
// Model `name` as gen-models.py wrote it into `dir` (<name>.json, .onnx and the raw files).
SuiteModel loadModel(const std::string& dir, const std::string& name);

// "" when `got` matches PyTorch's `expected`: same element type and element count, and for
// floats max |got - expected| <= 1e-4 * max |expected|; integers and bools exactly.
std::string compareWithTorch(const onnx::ImportedTensor& got, const onnx::ImportedTensor& expected,
                             const std::string& what);

// A raw file of `dtype` elements with `dims`; its size must match exactly.
onnx::ImportedTensor readRawTensor(const std::string& path, ir::DType dtype, const ir::Dims& dims);

}  // namespace qaic::conformance
