// SPDX-License-Identifier: Apache-2.0
// Runs an imported ONNX model on the host executor and compares results the way ONNX's backend
// tests do (numpy.testing.assert_allclose: |got - expected| <= atol + rtol * |expected|).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/HostProgram.hpp"
#include "onnx/OnnxImporter.hpp"

namespace qaic::conformance {

// A built program over an imported model; the model must outlive it (weights are borrowed).
class HostRun {
 public:
  HostRun(const onnx::ImportedModel& model, int threads);
  // inputs in the order of the io section's inputs; returns outputs in io order.
  std::vector<onnx::ImportedTensor> run(const std::vector<const onnx::ImportedTensor*>& inputs);

 private:
  const onnx::ImportedModel& model_;
  std::vector<ir::WeightTensor> weights_;
  std::unique_ptr<kernels::HostProgram> program_;
};

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// "" when `got` matches `expected` in element type, element count, dims (rank 0 == [1]) and
// values within tolerance; otherwise what differs, naming `what`.
std::string compareTensors(const onnx::ImportedTensor& got, const onnx::ImportedTensor& expected,
                           const std::string& what, Tolerance tolerance = {});

}  // namespace qaic::conformance
