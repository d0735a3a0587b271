// SPDX-License-Identifier: Apache-2.0
// Element access for constant tensors, so shape arithmetic (Shape -> Gather -> Concat -> Reshape)
// and batchnorm folding can compute at import time whatever the element type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/OnnxImporter.hpp"

namespace qaic::onnx {

// Largest tensor the importer computes at import time (folding, Dropout masks).
inline constexpr std::size_t kMaxFoldedBytes = std::size_t{256} << 20;

bool isIntegral(ir::DType dtype);
// Every element converted (float16 through float).
std::vector<double> toDoubles(const ImportedTensor& tensor);
std::vector<int64_t> toInt64s(const ImportedTensor& tensor);

// The single element of a one-element tensor; throws ImportError naming `what` otherwise.
double scalarValue(const ImportedTensor& tensor, const std::string& what);

// A tensor of `dtype` holding `values` converted element by element (C++ conversion rules).
ImportedTensor fromDoubles(std::string name, ir::DType dtype, ir::Dims dims, const std::vector<double>& values);
ImportedTensor fromInt64s(std::string name, ir::DType dtype, ir::Dims dims, const std::vector<int64_t>& values);

}  // namespace qaic::onnx
