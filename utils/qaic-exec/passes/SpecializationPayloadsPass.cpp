// SPDX-License-Identifier: Apache-2.0
// specialization-payloads: the program's JSON IR payload and allowed shape combinations, then
// one payload per other specialization, each selected by the combination of its buffers' dims.
// A specialization's constants join the container: one equal to a constant already there is
// shared, one that another specialization folded differently under the same name gets a name of
// its own.
#include <algorithm>

#include "CompileError.hpp"
#include "ConstantPacker.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

using container::QpcConstant;
using ir::ShapeCombination;

ir::ShapeCombination ioDims(const ir::Graph& graph) {
  ir::ShapeCombination dims;
  for (const auto& io : graph.io) dims.push_back(io.dims);
  return dims;
}

// The dims of the buffers the IO descriptor describes (retained buffers are not among them).
ShapeCombination described(const std::vector<bool>& retained, const ShapeCombination& dims) {
  ShapeCombination byBuffer;
  for (std::size_t b = 0; b < dims.size(); ++b)
    if (b >= retained.size() || !retained[b]) byBuffer.push_back(dims[b]);
  return byBuffer;
}

// Self-contained: the constants come from the container.
std::string payloadOf(ir::Graph graph) {
  graph.weightsFile.clear();
  return ir::toJson(graph);
}

// Renames tensor `from` to `to` everywhere in `graph` (ops, io, inferred tensors).
void renameTensor(ir::Graph& graph, const std::string& from, const std::string& to) {
  for (ir::Op& op : graph.ops) {
    for (auto* args : {&op.inputs, &op.outputs})
      for (ir::TensorArg& arg : *args)
        if (arg.name == from) arg.name = to;
  }
  for (ir::IoBuffer& io : graph.io)
    if (io.tensor == from) io.tensor = to;
  if (auto node = graph.tensors.extract(from)) {
    node.key() = to;
    graph.tensors.insert(std::move(node));
  }
}

// Both are packed with the same options, so equal sources make equal stored bytes.
bool sameConstant(const QpcConstant& a, const QpcConstant& b) {
  const auto& x = a.tensor;
  const auto& y = b.tensor;
  if (x.dtype != y.dtype || x.dims != y.dims || x.encoding != y.encoding || x.reductionAxis != y.reductionAxis ||
      x.data.size() != y.data.size() || !a.encoder != !b.encoder)
    return false;
  return x.data.data() == y.data.data() || std::equal(x.data.begin(), x.data.end(), y.data.begin());
}

// The last constant of that name among those already in the compilation (the program's own,
// then each specialization's in turn); nullptr when there is none.
const QpcConstant* constantNamed(const Compilation& compilation, const std::string& name) {
  const QpcConstant* found = nullptr;
  for (const auto& c : compilation.constants.constants)
    if (c.tensor.name == name) found = &c;
  for (const PackedConstants& list : compilation.extraConstants) {
    for (const auto& c : list.constants)
      if (c.tensor.name == name) found = &c;
  }
  return found;
}

}  // namespace

void specializationPayloadsPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  container::QpcContents& contents = compilation.contents;
  const ir::Graph& graph = compilation.variants[compilation.mainVariant].graph;
  const ir::ShapeCombination full = described(compilation.retained, compilation.fullDims);

  for (const auto& combination : graph.allowedShapes)
    contents.allowedShapes.push_back(described(compilation.retained, combination));
  compilation.payloads.push_back({payloadOf(graph), compilation.mainVariant, 0});
  // No specialization has every buffer's largest dims: the program's own is one combination of
  // its own, and the default (full dims) selects none that was compiled.
  const ir::ShapeCombination own = described(compilation.retained, ioDims(graph));
  if (!compilation.specializations.empty() && own != full) contents.allowedShapes.push_back(own);

  for (std::size_t v = 0; v < compilation.variants.size(); ++v) {
    if (v == compilation.mainVariant) continue;
    ir::Graph& other = compilation.variants[v].graph;
    ir::ShapeCombination combination = described(compilation.retained, ioDims(other));
    if (combination == full) continue;  // the default combination already
    for (const auto& existing : contents.allowedShapes) {
      if (existing == combination)
        throw CompileError(options.model + ": specializations " + std::to_string(v) +
                           " and another give the same buffer dims; each entry must select a "
                           "distinct shape combination");
    }
    const auto& weights = compilation.variants[v].weights;
    PackedConstants packed = packConstants(other, weights, options.convertToFp16, options.mxfp6Matmul);
    for (QpcConstant& constant : packed.constants) {
      const QpcConstant* existing = constantNamed(compilation, constant.tensor.name);
      if (existing != nullptr && sameConstant(*existing, constant)) {
        constant.tensor.name.clear();  // shared
        continue;
      }
      if (existing != nullptr) {
        const std::string renamed = constant.tensor.name + "@specialization" + std::to_string(v);
        renameTensor(other, constant.tensor.name, renamed);
        constant.tensor.name = renamed;
      }
    }
    compilation.extraConstants.push_back(std::move(packed));
    contents.allowedShapes.push_back(std::move(combination));
    // 1-based in the container's allShapeCombinations
    compilation.payloads.push_back({payloadOf(other), v, static_cast<uint32_t>(contents.allowedShapes.size())});
  }
}

}  // namespace qaic::compiler
