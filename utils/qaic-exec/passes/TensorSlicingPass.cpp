// SPDX-License-Identifier: Apache-2.0
// tensor-slicing: with a partition config of N >= 2 devices, after cast-placement has given every
// specialization's graph its final form, each graph is split into N with sliceTensors (Megatron-
// style, partition/TensorSlicing.hpp): the dominant weights divided, the KV caches divided by
// heads, the rest replicated. The split follows the graph, so every specialization splits the
// same way; the parts are checked to agree on their io before anything is built. With
// -allow-mxint8-mdp-io the parts' float collectives send MXINT8 (their param wire). Part 0's
// graphs replace the compilation's own, the others go to a compilation each; every part then
// derives its default dims and retained state from its own graphs (the part shape passes).
#include <map>
#include <string_view>

#include "CompileError.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

partition::WeightLookup lookupIn(const std::vector<ir::WeightTensor>& weights) {
  auto byName = std::make_shared<std::map<std::string, const ir::WeightTensor*, std::less<>>>();
  for (const ir::WeightTensor& weight : weights) (*byName)[weight.name] = &weight;
  return [byName](std::string_view name) -> const ir::WeightTensor* {
    auto it = byName->find(name);
    return it == byName->end() ? nullptr : it->second;
  };
}

// One part's network for one specialization: its graph, the unsplit weights it still reads and
// its slices, kept alive by both owners.
LoadedModel partModel(const LoadedModel& unsplit, partition::SlicedNetwork& net, std::size_t part) {
  struct Owners {
    std::shared_ptr<const void> unsplit, slices;
  };
  LoadedModel model;
  model.graph = std::move(net.parts[part]);
  model.weights = unsplit.weights;
  model.weights.insert(model.weights.end(), net.weights[part].begin(), net.weights[part].end());
  model.owner = std::make_shared<const Owners>(Owners{unsplit.owner, net.storage});
  return model;
}

// Every specialization's part p must have the io of specialization 0's part p (one IO
// descriptor per part); only dims may differ, as between whole specializations.
void checkPartsAgree(const std::string& model, const std::vector<std::vector<LoadedModel>>& byPart) {
  for (std::size_t p = 0; p < byPart.size(); ++p) {
    const ir::Graph& first = byPart[p].front().graph;
    for (std::size_t v = 1; v < byPart[p].size(); ++v) {
      const ir::Graph& graph = byPart[p][v].graph;
      std::string problem;
      if (graph.io.size() != first.io.size()) {
        problem = "has " + std::to_string(graph.io.size()) + " io buffers, specialization 0's has " +
                  std::to_string(first.io.size());
      }
      for (std::size_t b = 0; problem.empty() && b < graph.io.size(); ++b) {
        const ir::IoBuffer &io = graph.io[b], &ref = first.io[b];
        if (io.bufferName != ref.bufferName || io.direction != ref.direction || io.dtype != ref.dtype ||
            io.dims.size() != ref.dims.size())
          problem = "buffer '" + io.bufferName + "' differs from specialization 0's '" + ref.bufferName + "'";
      }
      if (!problem.empty())
        throw CompileError(model + ": tensor slicing: specialization " + std::to_string(v) + "'s part " +
                           std::to_string(p) + " " + problem + "; every specialization must split alike");
    }
  }
}

// -allow-mxint8-mdp-io: every float or float16 collective of a part sends MXINT8 (param wire).
void sendMxint8(ir::Graph& part) {
  for (ir::Op& op : part.ops) {
    if (op.optype != "all_reduce_sum" && op.optype != "all_gather") continue;
    const ir::DType dtype = part.tensors.at(op.inputs[0].name).dtype;
    if (dtype == ir::DType::Float || dtype == ir::DType::Float16) op.params.push_back({"wire", std::string("mxint8")});
  }
}

}  // namespace

void tensorSlicingPass(Compilation& compilation) {
  const std::size_t parts = compilation.partitionConfig.deviceCount();
  if (parts < 2 || compilation.partitionConfig.pipelined()) return;
  std::vector<std::vector<LoadedModel>> byPart(parts);
  const auto slices = std::make_shared<partition::WeightSlices>();  // every specialization's
  for (std::size_t v = 0; v < compilation.variants.size(); ++v) {
    const LoadedModel& unsplit = compilation.variants[v];
    partition::SlicedNetwork net = partition::sliceTensors(unsplit.graph, parts, lookupIn(unsplit.weights), {}, slices);
    if (compilation.options.allowMxint8MdpIo)
      for (ir::Graph& part : net.parts) sendMxint8(part);
    if (v == compilation.mainVariant) {
      compilation.summary.sliceReport = net.report.text();
      compilation.summary.splitWeights = 0;
      for (const std::string& line : net.report.split)
        if (!line.starts_with("retained buffer")) ++compilation.summary.splitWeights;
      compilation.partTraffic.clear();
      for (std::size_t p = 0; p < parts; ++p)
        compilation.partTraffic.push_back(partition::peerTraffic(net.parts[p], p, parts));
    }
    for (std::size_t p = 0; p < parts; ++p) byPart[p].push_back(partModel(unsplit, net, p));
  }
  checkPartsAgree(compilation.options.model, byPart);

  shapeParts(compilation, std::move(byPart));
}

}  // namespace qaic::compiler
