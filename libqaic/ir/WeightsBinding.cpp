// SPDX-License-Identifier: Apache-2.0
// Matching `create` ops with from_file=true against a weights file, and locating that file.
#include <filesystem>

#include "ir/OpError.hpp"
#include "ir/Weights.hpp"

namespace qaic::ir {

void bindWeights(const Graph& graph, const WeightsFile& weights) {
  for (const Op& op : graph.ops) {
    if (op.optype != "create" || !op.boolean("from_file")) continue;
    try {
      const TensorArg* dst = op.findOutput("dst");
      if (dst == nullptr) throwOpError(op, "output", "dst", "missing");
      const WeightTensor* weight = weights.find(dst->name);
      if (weight == nullptr) {
        throwParamError(op, "from_file", "no tensor '" + dst->name + "' in the weights file");
      }
      const auto type = parseDType(op.string("dtype"));
      if (!type || *type != weight->dtype) {
        throwParamError(op, "dtype",
                        op.string("dtype") + " != weights file dtype " + std::string(dtypeName(weight->dtype)));
      }
      const Dims dims = op.integers("dims");
      int64_t count = 1;
      for (int64_t d : dims) count = checkedMul(op, "dims", count, d);
      if (count != elementCount(weight->dims)) {
        throwParamError(op, "dims",
                        formatDims(dims) + " holds " + std::to_string(count) + " elements, weights file tensor " +
                            formatDims(weight->dims) + " holds " + std::to_string(elementCount(weight->dims)));
      }
    } catch (const IrError& e) {
      rethrowWithSource(e, graph.sourceName);
    }
  }
}

std::string_view weightEncodingName(WeightEncoding encoding) {
  switch (encoding) {
    case WeightEncoding::Plain: return "plain";
    case WeightEncoding::Mxfp6E2M3: return "mxfp6-e2m3";
    case WeightEncoding::Mxfp6E3M2: return "mxfp6-e3m2";
  }
  return "unknown";
}

std::string weightsPath(const Graph& graph) {
  if (graph.weightsFile.empty()) return {};
  const std::filesystem::path file(graph.weightsFile);
  if (file.is_absolute()) return file.string();
  return (std::filesystem::path(graph.sourceName).parent_path() / file).string();
}

}  // namespace qaic::ir
