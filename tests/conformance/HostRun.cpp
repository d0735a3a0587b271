// SPDX-License-Identifier: Apache-2.0
#include "HostRun.hpp"

#include <cmath>
#include <sstream>

#include "onnx/ConstantMath.hpp"

namespace qaic::conformance {

HostRun::HostRun(const onnx::ImportedModel& model, int threads) : model_(model), weights_(onnx::weightTensors(model)) {
  kernels::BuildOptions options;
  options.threads = threads;
  program_ = kernels::HostProgram::build(
      model.graph,
      [this](std::string_view name) -> const ir::WeightTensor* {
        for (const auto& w : weights_) {
          if (w.name == name) return &w;
        }
        return nullptr;
      },
      options);
}

std::vector<onnx::ImportedTensor> HostRun::run(const std::vector<const onnx::ImportedTensor*>& inputs) {
  std::vector<kernels::TensorView> in;
  std::vector<onnx::ImportedTensor> out;
  std::size_t next = 0;
  for (const auto& io : model_.graph.io) {
    if (io.direction == ir::Direction::In) {
      if (next >= inputs.size()) throw std::runtime_error("missing data for input '" + io.bufferName + "'");
      const onnx::ImportedTensor& t = *inputs[next++];
      if (t.dtype != io.dtype) throw std::runtime_error("input '" + io.bufferName + "' has the wrong element type");
      if (ir::elementCount(t.dims.empty() ? ir::Dims{1} : t.dims) != ir::elementCount(io.dims)) {
        throw std::runtime_error("input '" + io.bufferName + "' has the wrong element count");
      }
      in.push_back({io.dtype, io.dims, const_cast<std::byte*>(t.data.data()), t.data.size()});
    } else {
      onnx::ImportedTensor t{io.bufferName, io.dtype, io.dims, {}};
      t.data.resize(static_cast<std::size_t>(ir::elementCount(io.dims)) * ir::dtypeSize(io.dtype));
      out.push_back(std::move(t));
    }
  }
  std::vector<kernels::TensorView> outViews;
  for (auto& t : out) outViews.push_back({t.dtype, t.dims, t.data.mutableData(), t.data.size()});
  program_->run(in, outViews);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].dims = outViews[i].dims;
  return out;
}

std::string compareTensors(const onnx::ImportedTensor& got, const onnx::ImportedTensor& expected,
                           const std::string& what, Tolerance tolerance) {
  std::ostringstream problem;
  if (got.dtype != expected.dtype) {
    problem << what << ": element type " << ir::dtypeName(got.dtype) << ", expected " << ir::dtypeName(expected.dtype);
    return problem.str();
  }
  const ir::Dims gotDims = got.dims.empty() ? ir::Dims{1} : got.dims;
  const ir::Dims wantDims = expected.dims.empty() ? ir::Dims{1} : expected.dims;
  if (gotDims != wantDims) {
    problem << what << ": dims differ (" << gotDims.size() << "-D result vs " << wantDims.size() << "-D expected";
    for (std::size_t i = 0; i < std::min(gotDims.size(), wantDims.size()); ++i) {
      if (gotDims[i] != wantDims[i]) problem << "; dim " << i << ": " << gotDims[i] << " vs " << wantDims[i];
    }
    problem << ")";
    return problem.str();
  }
  const auto a = onnx::toDoubles(got), b = onnx::toDoubles(expected);
  if (a.size() != b.size()) return what + ": element counts differ";
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool bothNan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!bothNan && !(std::abs(a[i] - b[i]) <= tolerance.atol + tolerance.rtol * std::abs(b[i]))) {
      if (mismatches++ == 0) first = i;
    }
  }
  if (mismatches == 0) return "";
  problem << what << ": " << mismatches << " of " << a.size() << " elements differ; first at " << first << ": got "
          << a[first] << ", expected " << b[first];
  return problem.str();
}

}  // namespace qaic::conformance
