// SPDX-License-Identifier: Apache-2.0
#include "HostReference.hpp"

#include <memory>
#include <string>
#include <string_view>

#include "ir/Graph.hpp"
#include "ir/Weights.hpp"
#include "kernels/HostProgram.hpp"

namespace qaic::testing {

std::vector<std::vector<float>> hostReferenceOutputs(const std::filesystem::path& irPath,
                                                     const std::vector<std::vector<float>>& inputs,
                                                     const std::vector<std::vector<int64_t>>& inputDims) {
  ir::Graph graph = ir::loadGraph(irPath.string());
  ir::inferShapes(graph);
  std::unique_ptr<ir::WeightsFile> weights;
  if (!graph.weightsFile.empty()) weights = ir::WeightsFile::open((irPath.parent_path() / graph.weightsFile).string());
  auto program = kernels::HostProgram::build(graph, [&](std::string_view tensor) -> const ir::WeightTensor* {
    return weights ? weights->find(tensor) : nullptr;
  });
  std::vector<kernels::TensorView> ins;
  std::vector<std::vector<float>> inCopies = inputs;
  std::size_t next = 0;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::In) continue;
    const ir::Dims dims = next < inputDims.size() && !inputDims[next].empty() ? inputDims[next] : io.dims;
    ins.push_back({ir::DType::Float, dims, inCopies[next].data(), inCopies[next].size() * sizeof(float)});
    ++next;
  }
  std::vector<std::vector<float>> outs;
  std::vector<kernels::TensorView> outViews;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    outs.emplace_back(static_cast<std::size_t>(ir::elementCount(io.dims)));
  }
  std::size_t o = 0;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    outViews.push_back({ir::DType::Float, io.dims, outs[o].data(), outs[o].size() * sizeof(float)});
    ++o;
  }
  program->run(ins, outViews);
  for (std::size_t i = 0; i < outs.size(); ++i)
    outs[i].resize(static_cast<std::size_t>(ir::elementCount(outViews[i].dims)));
  return outs;
}

}  // namespace qaic::testing
