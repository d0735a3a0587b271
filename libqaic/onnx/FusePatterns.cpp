// SPDX-License-Identifier: Apache-2.0
// Subgraphs that PyTorch's exporter writes for one module, converted into the one IR op that
// computes them with one oneDNN primitive: GELU's erf form and LayerNorm's decomposition (opsets
// before 17). A pattern matches only when every intermediate value has exactly the consumers
// the pattern needs and no intermediate is a graph output; otherwise the nodes convert one by one.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

namespace pb = ::onnx;

bool isOp(const pb::NodeProto* node, const char* opType) {
  return node != nullptr && node->op_type() == opType && (node->domain().empty() || node->domain() == "ai.onnx") &&
         node->output_size() >= 1;
}

// The single value of a one-element constant, when `value` is one.
std::optional<double> scalarConstant(const Converter& c, const std::string& value) {
  const ImportedTensor* t = c.constantValue(value);
  if (t == nullptr || ir::elementCount(t->dims) != 1) return std::nullopt;
  return toDoubles(*t)[0];
}

bool near(std::optional<double> value, double target) {
  return value && std::fabs(*value - target) <= 1e-6 * std::fabs(target);
}

// The input of binary `node` other than `value`, or "" when `value` is not one of its inputs.
std::string otherInput(const pb::NodeProto& node, const std::string& value) {
  if (node.input_size() != 2) return "";
  if (node.input(0) == value) return node.input(1);
  if (node.input(1) == value) return node.input(0);
  return "";
}

// The reduced axes of a ReduceMean, normalized and sorted, when it keeps its dims: an attribute
// before opset 18, a constant input from opset 18 on.
std::optional<std::vector<int64_t>> meanAxes(const Converter& c, const pb::NodeProto& node, std::size_t rank) {
  std::vector<int64_t> axes;
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "keepdims" && attribute.i() == 0) return std::nullopt;
    if (attribute.name() == "axes") axes.assign(attribute.ints().begin(), attribute.ints().end());
  }
  if (node.input_size() == 2 && axes.empty() && c.opset() >= 18) {
    const ImportedTensor* given = c.constantValue(node.input(1));
    if (given == nullptr) return std::nullopt;
    axes = toInt64s(*given);
  } else if (node.input_size() != 1) {
    return std::nullopt;
  }
  if (axes.empty()) return std::nullopt;
  for (auto& axis : axes) {
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

}  // namespace

// x * 0.5 * (1 + erf(x / sqrt(2))) as PyTorch writes it: Div(x, sqrt 2) -> Erf -> Add(1) ->
// Mul(x) -> Mul(0.5).
bool fuseGelu(Converter& c) {
  const pb::NodeProto& div = c.node();
  // A constant input is evaluated node by node instead (ConstantEvaluation.cpp).
  if (div.input_size() != 2 || c.constant(0) || c.dtype(0) != ir::DType::Float ||
      !near(scalarConstant(c, div.input(1)), std::sqrt(2.0))) {
    return false;
  }
  const std::string& x = div.input(0);
  const pb::NodeProto* erf = c.soleConsumer(div.output(0));
  if (!isOp(erf, "Erf")) return false;
  const pb::NodeProto* add = c.soleConsumer(erf->output(0));
  if (!isOp(add, "Add") || !near(scalarConstant(c, otherInput(*add, erf->output(0))), 1.0)) return false;
  const pb::NodeProto* product = c.soleConsumer(add->output(0));
  if (!isOp(product, "Mul") || otherInput(*product, add->output(0)) != x) return false;
  const pb::NodeProto* half = c.soleConsumer(product->output(0));
  if (!isOp(half, "Mul") || !near(scalarConstant(c, otherInput(*half, product->output(0))), 0.5)) return false;
  unaryFunction(c, "gelu", c.tensor(0), c.output(0));
  const std::string result = c.tensorOf(div.output(0));
  for (const pb::NodeProto* node : {erf, add, product, half}) c.absorb(*node, node->output(0), result);
  return true;
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias] over trailing axes:
// ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div [-> Mul -> Add].
bool fuseLayerNorm(Converter& c) {
  const pb::NodeProto& mean = c.node();
  if (c.dtype(0) != ir::DType::Float || c.constant(0)) return false;
  const ir::Dims in = c.dims(0);
  const auto axes = meanAxes(c, mean, in.size());
  if (!axes) return false;
  for (std::size_t i = 0; i < axes->size(); ++i) {
    if ((*axes)[i] != static_cast<int64_t>(in.size() - axes->size() + i)) return false;  // trailing axes only
  }
  const std::string& x = mean.input(0);
  const pb::NodeProto* sub = c.soleConsumer(mean.output(0));
  if (!isOp(sub, "Sub") || sub->input(0) != x || sub->input(1) != mean.output(0)) return false;
  const auto centered = c.consumers(sub->output(0));
  if (centered.size() != 2) return false;
  const pb::NodeProto* pow = isOp(centered[0], "Pow") ? centered[0] : centered[1];
  const pb::NodeProto* div = pow == centered[0] ? centered[1] : centered[0];
  if (!isOp(pow, "Pow") || pow->input(0) != sub->output(0) || !near(scalarConstant(c, pow->input(1)), 2.0))
    return false;
  const pb::NodeProto* variance = c.soleConsumer(pow->output(0));
  if (!isOp(variance, "ReduceMean") || meanAxes(c, *variance, in.size()) != axes) return false;
  const pb::NodeProto* addEps = c.soleConsumer(variance->output(0));
  if (!isOp(addEps, "Add")) return false;
  const auto epsilon = scalarConstant(c, otherInput(*addEps, variance->output(0)));
  if (!epsilon || !(*epsilon > 0)) return false;
  const pb::NodeProto* sqrt = c.soleConsumer(addEps->output(0));
  if (!isOp(sqrt, "Sqrt") || c.soleConsumer(sqrt->output(0)) != div) return false;
  if (!isOp(div, "Div") || div->input(0) != sub->output(0) || div->input(1) != sqrt->output(0)) return false;

  const ir::Dims normalized(in.begin() + static_cast<std::ptrdiff_t>(in.size() - axes->size()), in.end());
  // An affine Mul / Add with constants of the normalized dims (leading 1s allowed) joins in.
  const auto affine = [&](const pb::NodeProto* node, const std::string& from,
                          const char* opType) -> const ImportedTensor* {
    if (!isOp(node, opType)) return nullptr;
    const ImportedTensor* t = c.constantValue(otherInput(*node, from));
    if (t == nullptr || t->dtype != ir::DType::Float || ir::elementCount(t->dims) != ir::elementCount(normalized)) {
      return nullptr;
    }
    for (std::size_t i = 0; i + normalized.size() < t->dims.size(); ++i) {
      if (t->dims[i] != 1) return nullptr;
    }
    if (t->dims.size() < normalized.size() ||
        !std::equal(normalized.begin(), normalized.end(),
                    t->dims.end() - static_cast<std::ptrdiff_t>(normalized.size()))) {
      return nullptr;
    }
    return t;
  };
  std::vector<const pb::NodeProto*> absorbed = {sub, pow, variance, addEps, sqrt, div};
  const pb::NodeProto* scaleNode = c.soleConsumer(div->output(0));
  const ImportedTensor* scale = affine(scaleNode, div->output(0), "Mul");
  const ImportedTensor* bias = nullptr;
  if (scale) {
    absorbed.push_back(scaleNode);
    const pb::NodeProto* biasNode = c.soleConsumer(scaleNode->output(0));
    bias = affine(biasNode, scaleNode->output(0), "Add");
    if (bias) absorbed.push_back(biasNode);
  }
  const auto constant = [&](const ImportedTensor* t, double fill, const std::string& role) {
    ImportedTensor value = t ? *t
                             : fromDoubles(
                                   "", ir::DType::Float, normalized,
                                   std::vector<double>(static_cast<std::size_t>(ir::elementCount(normalized)), fill));
    value.dims = normalized;
    return c.constantTensor(std::move(value), c.label() + "/" + role);
  };
  const std::string scaleTensor = constant(scale, 1.0, "scale");
  const std::string biasTensor = constant(bias, 0.0, "bias");
  emitLayerNorm(c, c.tensor(0), scaleTensor, biasTensor, in.size() - axes->size(), *epsilon, c.output(0));
  const std::string result = c.tensorOf(mean.output(0));
  for (const pb::NodeProto* node : absorbed) c.absorb(*node, node->output(0), result);
  return true;
}

}  // namespace qaic::onnx
