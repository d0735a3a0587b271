// SPDX-License-Identifier: Apache-2.0
#include "onnx/Converter.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>

#include "onnx/ConstantMath.hpp"
#include "onnx/OnnxTensor.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {

namespace pb = ::onnx;

ir::Param numberParam(std::string argName, double value) { return {std::move(argName), value}; }

ir::Param integersParam(std::string argName, const std::vector<int64_t>& values) {
  return {std::move(argName), std::vector<double>(values.begin(), values.end())};
}

ir::Param numbersParam(std::string argName, const std::vector<double>& values) { return {std::move(argName), values}; }

ir::Param stringParam(std::string argName, std::string value) { return {std::move(argName), std::move(value)}; }

ir::Param boolParam(std::string argName, bool value) { return {std::move(argName), value}; }

ir::Dims irDims(const ir::Dims& dims) { return dims.empty() ? ir::Dims{1} : dims; }

std::vector<ir::Param> createParams(ir::DType dtype, const ir::Dims& dims, bool fromFile) {
  return {stringParam("dtype", std::string(ir::dtypeName(dtype))), integersParam("dims", dims),
          integersParam("ran", {0, 0}), integersParam("data", {0}), boolParam("from_file", fromFile)};
}

namespace {

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string describeNode(const pb::NodeProto& node, std::size_t index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return node.op_type() + " (node '" + name + "')";
}

// A bound far above any real network input that keeps every dims product far from overflow.
constexpr int64_t kMaxInputElements = int64_t{1} << 32;

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

}  // namespace

Converter::Converter(const pb::ModelProto& model, const ImportOptions& options, std::string sourceName)
    : model_(model), graph_(model.graph()), options_(options) {
  result_.graph.sourceName = std::move(sourceName);
}

ImportedModel Converter::run() {
  readOpset();
  for (const auto& v : graph_.input()) reservedNames_.insert(v.name());
  for (const auto& t : graph_.initializer()) reservedNames_.insert(t.name());
  forEachNode(graph_, [&](const pb::NodeProto& n) {
    for (const auto& o : n.output()) reservedNames_.insert(o);
  });
  bindInitializers();
  bindInputs();
  indexConsumers();
  for (int i = 0; i < graph_.node_size(); ++i) convertNodeOrBranch(graph_.node(i), static_cast<std::size_t>(i), 0);
  node_ = nullptr;
  entry_ = nullptr;
  throwOffenders();
  bindOutputs();
  return std::move(result_);
}

void Converter::readOpset() {
  for (const auto& entry : model_.opset_import()) {
    if (isDefaultDomain(entry.domain())) opset_ = entry.version();
  }
  if (opset_ <= 0) throw ImportError("the model imports no version of the default ONNX operator set");
}

void Converter::throwOffenders() const {
  if (unsupportedOperators_.empty() && offenders_.empty()) return;
  std::vector<std::string> parts;
  if (!unsupportedOperators_.empty()) parts.push_back("unsupported operators: " + joined(unsupportedOperators_, ", "));
  if (!offenders_.empty()) parts.push_back("unsupported nodes: " + joined(offenders_, "; "));
  std::vector<std::string> all = unsupportedOperators_;
  all.insert(all.end(), offenders_.begin(), offenders_.end());
  throw ImportError(joined(parts, "; "), all);
}

void Converter::bindInitializers() {
  for (const auto& proto : graph_.initializer()) {
    if (proto.name().empty()) throw ImportError("an initializer has no name");
    if (values_.count(proto.name())) throw ImportError("initializer '" + proto.name() + "' is defined twice");
    auto tensor = std::make_shared<ImportedTensor>(
        tensorFromProto(proto, "initializer '" + proto.name() + "'", options_.externalDataDir));
    values_[proto.name()].constant = std::move(tensor);
  }
}

ir::Dims Converter::resolveInputDims(const pb::ValueInfoProto& input) const {
  const std::string what = "graph input '" + input.name() + "'";
  if (!input.type().has_tensor_type()) throw ImportError(what + " is not a tensor");
  const auto& type = input.type().tensor_type();
  if (!type.has_shape()) throw ImportError(what + " has no shape; the compiler needs static dims");
  const auto& shape = type.shape();
  if (static_cast<std::size_t>(shape.dim_size()) > ir::kMaxRank) {
    throw ImportError(what + ": rank " + std::to_string(shape.dim_size()) + " exceeds " + std::to_string(ir::kMaxRank));
  }
  ir::Dims dims;
  int64_t elements = 1;
  for (int d = 0; d < shape.dim_size(); ++d) {
    const auto& dim = shape.dim(d);
    const std::string where = what + " dim " + std::to_string(d);
    int64_t value = 0;
    if (dim.has_dim_value()) {
      value = dim.dim_value();
      if (d == 0 && value == 1 && options_.batchSize > 0) value = options_.batchSize;
    } else if (dim.has_dim_param() && options_.symbols.count(dim.dim_param())) {
      value = options_.symbols.at(dim.dim_param());
    } else if (d == 0 && options_.batchSize > 0) {
      value = options_.batchSize;
    } else if (dim.has_dim_param()) {
      throw ImportError(where + " is the symbol '" + dim.dim_param() +
                        "'; define it (-onnx-define-symbol=" + dim.dim_param() + ",<value>) or set a batch size");
    } else {
      throw ImportError(where + " is unknown; the compiler needs static dims");
    }
    if (value <= 0) throw ImportError(where + " is " + std::to_string(value) + "; dims must be positive");
    if (elements > kMaxInputElements / value) throw ImportError(what + " has more than 2^32 elements");
    elements *= value;
    dims.push_back(value);
  }
  return dims;
}

void Converter::bindInputs() {
  for (const auto& input : graph_.input()) {
    if (input.name().empty()) throw ImportError("a graph input has no name");
    if (values_.count(input.name())) {
      if (values_[input.name()].constant) continue;  // an initializer's declaration, not a network input
      throw ImportError("graph input '" + input.name() + "' is declared twice");
    }
    const auto dtype = dtypeFromOnnx(input.type().tensor_type().elem_type());
    if (!input.type().has_tensor_type() || !dtype) {
      throw ImportError("graph input '" + input.name() + "' has an unsupported type (" +
                        std::string(onnxTypeName(input.type().tensor_type().elem_type())) + ")");
    }
    const ir::Dims dims = resolveInputDims(input);
    ir::IoBuffer io;
    io.bufferName = input.name();
    io.tensor = uniqueTensorName(input.name());
    io.direction = ir::Direction::In;
    io.dtype = *dtype;
    io.dims = irDims(dims);
    Value& value = values_[input.name()];
    value.tensor = io.tensor;
    if (dims.empty()) value.onnxDims = dims;
    inputTensors_.insert(io.tensor);
    result_.graph.io.push_back(std::move(io));
  }
}

void Converter::indexConsumers() {
  // A node inside an If's branch counts as a consumer too (it reads outer values by name).
  forEachNode(graph_, [&](const pb::NodeProto& n) {
    std::set<std::string> seen;
    for (const auto& in : n.input()) {
      if (!in.empty() && seen.insert(in).second) consumers_[in].push_back(&n);
    }
  });
  for (const auto& out : graph_.output()) graphOutputs_.insert(out.name());
}

std::string Converter::unsupportedAttributes(const OperatorEntry& entry) const {
  std::vector<std::string> unknown;
  for (const auto& attribute : node_->attribute()) {
    if (std::find(entry.attributes.begin(), entry.attributes.end(), attribute.name()) == entry.attributes.end()) {
      unknown.push_back("'" + attribute.name() + "'");
    }
  }
  if (unknown.empty()) return "";
  return (unknown.size() == 1 ? "attribute " : "attributes ") + joined(unknown, ", ") + " not supported";
}

void Converter::forEachNode(const pb::GraphProto& graph, const std::function<void(const pb::NodeProto&)>& visit) {
  for (const auto& n : graph.node()) {
    visit(n);
    for (const auto& attribute : n.attribute()) {
      if (attribute.has_g()) forEachNode(attribute.g(), visit);
    }
  }
}

// An If whose condition is known here (PyTorch's shape tests: a squeeze of a dim that may be 1,
// LocalResponseNorm's rank test) is the branch it takes: the branch's nodes are converted in
// its place, and the If's outputs are the branch's. A condition known only at run time is an
// offender like an unsupported operator.
void Converter::convertNodeOrBranch(const pb::NodeProto& n, std::size_t index, int depth) {
  const OperatorEntry* entry = isDefaultDomain(n.domain()) ? findOperator(n.op_type()) : nullptr;
  if (entry == nullptr || !entry->selectsBranch) return convertNode(n, index);
  const std::string label = n.name().empty() ? "If_" + std::to_string(index) : n.name();
  const auto refuse = [&](const std::string& problem) {
    offenders_.push_back("If node '" + label + "': " + problem);
    for (const auto& out : n.output()) {
      if (!out.empty()) poisoned_.insert(out);
    }
  };
  if (n.input_size() != 1 || n.input(0).empty()) return refuse("needs exactly one input, the condition");
  if (poisoned_.count(n.input(0))) return refuse("its condition comes from a node that was not converted");
  const auto cond = values_.find(n.input(0));
  if (cond == values_.end()) return refuse("condition '" + n.input(0) + "' is not produced by an earlier node");
  if (!cond->second.constant)
    return refuse("its condition is known only at run time (only conditions on static shapes are supported)");
  const auto truth = toDoubles(*cond->second.constant);
  if (truth.size() != 1) return refuse("the condition must hold one value");
  if (depth >= 16) return refuse("If nested deeper than 16 levels");
  const char* taken = truth[0] != 0 ? "then_branch" : "else_branch";
  const pb::GraphProto* branch = nullptr;
  for (const auto& attribute : n.attribute()) {
    if (attribute.name() == taken && attribute.has_g()) branch = &attribute.g();
  }
  if (branch == nullptr) return refuse(std::string("has no ") + taken);
  if (branch->initializer_size() > 0)
    return refuse(std::string(taken) + " holds initializers, which are not supported");
  if (branch->output_size() != n.output_size())
    return refuse(std::string(taken) + " has " + std::to_string(branch->output_size()) + " outputs, the If " +
                  std::to_string(n.output_size()));
  for (const auto& inner : branch->node()) convertNodeOrBranch(inner, index, depth + 1);
  for (int i = 0; i < n.output_size(); ++i) {
    const std::string& out = n.output(i);
    const std::string& from = branch->output(i).name();
    if (out.empty()) continue;
    if (poisoned_.count(from) || !values_.count(from)) {
      poisoned_.insert(out);
      continue;
    }
    if (values_.count(out)) return refuse("output '" + out + "' is already defined");
    values_[out] = values_.at(from);
  }
}

void Converter::convertNode(const pb::NodeProto& n, std::size_t index) {
  if (absorbed_.count(&n)) return;
  const auto poison = [&] {
    for (const auto& out : n.output()) {
      if (!out.empty()) poisoned_.insert(out);
    }
  };
  node_ = &n;
  entry_ = nullptr;
  std::string wanted = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  label_ = wanted;
  for (int k = 1; !usedLabels_.insert(label_).second; ++k) label_ = wanted + "_" + std::to_string(k);
  attributes_ = std::make_unique<NodeAttributes>(n, label_);

  // The operator and its attributes are checked for every node, whatever its inputs.
  const OperatorEntry* entry = isDefaultDomain(n.domain()) ? findOperator(n.op_type()) : nullptr;
  if (entry == nullptr) {
    std::string description = describeNode(n, index);
    if (!isDefaultDomain(n.domain())) description = n.domain() + "::" + description;
    unsupportedOperators_.push_back(std::move(description));
    return poison();
  }
  entry_ = entry;
  if (const std::string attributes = unsupportedAttributes(*entry); !attributes.empty()) {
    offenders_.push_back(n.op_type() + " node '" + label_ + "': " + attributes);
    return poison();
  }
  // A consumer of an offender's output is not converted: its input does not exist.
  for (const auto& in : n.input()) {
    if (poisoned_.count(in)) return poison();
  }
  for (int i = 0; i < n.input_size(); ++i) {
    if (!n.input(i).empty() && !values_.count(n.input(i))) {
      fail("input '" + n.input(i) + "' is not produced by an earlier node, an initializer or a graph input");
    }
  }
  for (const auto& out : n.output()) {
    if (!out.empty() && values_.count(out)) fail("output '" + out + "' is already defined");
  }
  bool allConstant = true;
  std::map<std::string, Value> savedInputs;
  for (std::size_t i = 0; i < inputCount(); ++i) {
    if (!hasInput(i)) continue;
    if (!constant(i)) allConstant = false;
    savedInputs[n.input(static_cast<int>(i))] = values_.at(n.input(static_cast<int>(i)));
  }
  const Mark mark{result_.graph.ops.size(), result_.weights.size()};
  // Before import-time evaluation, which reads every output: a node may name more outputs than
  // its operator has (a malformed model the fuzzer built: Gather with two).
  const auto requireOutputsDefined = [&] {
    for (int i = 0; i < n.output_size(); ++i) {
      if (hasOutput(static_cast<std::size_t>(i)) && !values_.count(n.output(i))) {
        fail("output " + std::to_string(i) + " ('" + n.output(i) + "') is not supported by the importer");
      }
    }
  };
  try {
    if (entry->fold && (allConstant || entry->foldWithoutConstantInputs) && entry->fold(*this)) {
      requireOutputsDefined();
    } else if (!entry->convert) {
      fail("is only supported when its inputs are known at import time (shape arithmetic)");
    } else {
      entry->convert(*this);
      requireOutputsDefined();
      if (allConstant) evaluateConstantNode(mark, savedInputs);
    }
  } catch (const ImportError& e) {
    rollBack(mark, savedInputs);
    offenders_.push_back(e.what());
    poison();
  } catch (const ir::IrError& e) {
    rollBack(mark, savedInputs);
    offenders_.push_back(irErrorOrigin(e) + ": " + e.what());
    poison();
  }
}

void Converter::rollBack(const Mark& mark, const std::map<std::string, Value>& savedInputs) {
  for (std::size_t i = mark.ops; i < result_.graph.ops.size(); ++i) {
    for (const auto& out : result_.graph.ops[i].outputs) constantTensors_.erase(out.name);
  }
  result_.graph.ops.resize(mark.ops);
  result_.weights.resize(mark.weights);
  for (const auto& [name, value] : savedInputs) values_[name] = value;
  for (const auto& out : node_->output()) {
    if (!out.empty() && !savedInputs.count(out)) values_.erase(out);
  }
}

void Converter::bindOutputs() {
  node_ = nullptr;
  std::set<std::string> boundTensors;
  std::vector<ir::IoBuffer> outputs;
  std::set<std::string> bufferNames;
  for (const auto& io : result_.graph.io) bufferNames.insert(io.bufferName);
  for (const auto& output : graph_.output()) {
    if (!bufferNames.insert(output.name()).second) {
      throw ImportError("graph output '" + output.name() + "' repeats the name of another graph input or output");
    }
    const auto it = values_.find(output.name());
    if (it == values_.end()) throw ImportError("graph output '" + output.name() + "' is not produced by any node");
    std::string tensor = materialize(it->second, output.name());
    // An output must be its own tensor: copy (a same-shape reshape) when it is an input or bound
    // twice.
    if (inputTensors_.count(tensor) || boundTensors.count(tensor)) {
      const std::string copy = uniqueTensorName(output.name() + "/copy");
      emit("reshape", {{"src", tensor}}, {{"dst", copy}}, {integersParam("dims", irDims(tensorDims(tensor)))});
      tensor = copy;
    }
    boundTensors.insert(tensor);
    ir::IoBuffer io;
    io.bufferName = output.name();
    io.tensor = tensor;
    io.direction = ir::Direction::Out;
    outputs.push_back(std::move(io));
  }
  try {
    inferShapes();
    for (auto& io : outputs) {
      const ir::TensorInfo& info = result_.graph.tensors.at(io.tensor);
      io.dtype = info.dtype;
      io.dims = irDims(info.dims);
    }
    for (auto& io : outputs) {
      // A rank-0 result (matmul of two vectors) leaves the network as [1], like any scalar.
      const ir::TensorInfo& info = result_.graph.tensors.at(io.tensor);
      if (info.dims.empty()) {
        const std::string copy = uniqueTensorName(io.bufferName + "/scalar");
        emit("reshape", {{"src", io.tensor}}, {{"dst", copy}}, {integersParam("dims", {1})});
        io.tensor = copy;
      }
    }
    for (auto& io : outputs) result_.graph.io.push_back(std::move(io));
    inferShapes();
    // Shape inference skips the per-op parameter rules that parsing checks (e.g. padding smaller
    // than the window): the importer's graph must pass everything an IR file must.
    ir::parseGraph(ir::toJson(result_.graph), result_.graph.sourceName);
  } catch (const ir::IrError& e) {
    throw ImportError(irErrorOrigin(e) + ": " + e.what());
  }
}

void Converter::inferShapes() { ir::inferShapes(result_.graph); }

std::string Converter::irErrorOrigin(const ir::IrError& e) const {
  const auto origin = opOrigins_.find(e.opName());
  if (origin != opOrigins_.end()) return origin->second;
  if (node_) return node_->op_type() + " node '" + label_ + "'";
  return "the imported graph is invalid";
}

bool Converter::hasInput(std::size_t i) const {
  return i < static_cast<std::size_t>(node_->input_size()) && !node_->input(static_cast<int>(i)).empty();
}

bool Converter::hasOutput(std::size_t i) const {
  return i < static_cast<std::size_t>(node_->output_size()) && !node_->output(static_cast<int>(i)).empty();
}

std::size_t Converter::inputCount() const { return static_cast<std::size_t>(node_->input_size()); }
std::size_t Converter::outputCount() const { return static_cast<std::size_t>(node_->output_size()); }

const Converter::Value* Converter::findInputValue(std::size_t i) const {
  if (!hasInput(i)) return nullptr;
  const auto it = values_.find(node_->input(static_cast<int>(i)));
  return it == values_.end() ? nullptr : &it->second;
}

Converter::Value& Converter::inputValue(std::size_t i) {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is missing");
  return values_.at(node_->input(static_cast<int>(i)));
}

const ImportedTensor* Converter::constant(std::size_t i) const {
  const Value* value = findInputValue(i);
  return value ? value->constant.get() : nullptr;
}

const ImportedTensor& Converter::requireConstant(std::size_t i, const std::string& role) const {
  const ImportedTensor* value = constant(i);
  if (!value) {
    if (!hasInput(i)) fail("input " + std::to_string(i) + " (" + role + ") is missing");
    fail("input '" + node_->input(static_cast<int>(i)) + "' (" + role +
         ") must be known at import time (an initializer or computable from constants)");
  }
  return *value;
}

const ImportedTensor* Converter::constantValue(const std::string& value) const {
  const auto it = values_.find(value);
  return it == values_.end() ? nullptr : it->second.constant.get();
}

const std::string& Converter::tensorOf(const std::string& value) const { return values_.at(value).tensor; }

// A constant gets one `create` (and one weights entry) however many values share it: PyTorch's
// exporter shares a deduplicated initializer through Identity nodes (every layer of a copied
// nn.TransformerEncoderLayer starts with the same weights).
std::string Converter::materialize(Value& value, const std::string& name) {
  if (!value.tensor.empty()) return value.tensor;
  if (const auto it = materialized_.find(value.constant.get());
      it != materialized_.end() && constantTensors_.count(it->second)) {
    value.tensor = it->second;
    return value.tensor;
  }
  ImportedTensor data = *value.constant;
  data.dims = irDims(data.dims);
  value.tensor = constantTensor(std::move(data), name);
  constantTensors_[value.tensor] = value.constant;
  materialized_[value.constant.get()] = value.tensor;
  return value.tensor;
}

std::string Converter::tensor(std::size_t i) {
  // inputValue first: it refuses a missing input, which node_->input(i) would read out of range
  // (as one call's two arguments the order is the compiler's; gcc read the name first).
  Value& value = inputValue(i);
  return materialize(value, node_->input(static_cast<int>(i)));
}

ir::Dims Converter::dims(std::size_t i) {
  const Value& value = inputValue(i);
  if (value.constant) return value.constant->dims;
  if (value.onnxDims) return *value.onnxDims;
  return tensorDims(value.tensor);
}

ir::DType Converter::dtype(std::size_t i) {
  const Value& value = inputValue(i);
  if (value.constant) return value.constant->dtype;
  return tensorDType(value.tensor);
}

ir::Dims Converter::tensorDims(const std::string& irTensor) {
  auto it = result_.graph.tensors.find(irTensor);
  if (it == result_.graph.tensors.end()) {
    inferShapes();
    it = result_.graph.tensors.find(irTensor);
    if (it == result_.graph.tensors.end()) fail("internal: no shape for tensor '" + irTensor + "'");
  }
  return it->second.dims;
}

ir::DType Converter::tensorDType(const std::string& irTensor) {
  tensorDims(irTensor);
  return result_.graph.tensors.at(irTensor).dtype;
}

void Converter::requireRank(std::size_t i, std::initializer_list<std::size_t> ranks) {
  const std::size_t rank = dims(i).size();
  std::string allowed;
  for (std::size_t r : ranks) {
    if (r == rank) return;
    allowed += (allowed.empty() ? "" : " or ") + std::to_string(r);
  }
  fail("input '" + node_->input(static_cast<int>(i)) + "' has rank " + std::to_string(rank) + "; supported: rank " +
       allowed);
}

std::string Converter::uniqueTensorName(const std::string& wanted) {
  std::string name = wanted;
  for (int k = 1; usedTensors_.count(name) || (name != wanted && reservedNames_.count(name)); ++k) {
    name = wanted + "_" + std::to_string(k);
  }
  usedTensors_.insert(name);
  return name;
}

std::string Converter::uniqueOpName(const std::string& wanted) {
  std::string name = wanted;
  for (int k = 1; !usedOps_.insert(name).second; ++k) name = wanted + "/" + std::to_string(k);
  return name;
}

std::string Converter::output(std::size_t i) {
  if (!hasOutput(i)) fail("output " + std::to_string(i) + " is missing");
  const std::string& name = node_->output(static_cast<int>(i));
  Value& value = values_[name];
  value.tensor = uniqueTensorName(name);
  return value.tensor;
}

void Converter::setOnnxDims(std::size_t outputIndex, ir::Dims dims) {
  if (!hasOutput(outputIndex)) return;
  values_[node_->output(static_cast<int>(outputIndex))].onnxDims = std::move(dims);
}

void Converter::keepScalarOutput(std::size_t outputIndex) {
  for (std::size_t i = 0; i < inputCount(); ++i) {
    if (hasInput(i) && !dims(i).empty()) return;
  }
  setOnnxDims(outputIndex, {});
}

std::string Converter::temporary(const std::string& hint) {
  std::string wanted = label_ + "/" + hint;
  while (reservedNames_.count(wanted)) wanted += "_";
  return uniqueTensorName(wanted);
}

void Converter::emit(std::string optype, std::vector<ir::TensorArg> inputs, std::vector<ir::TensorArg> outputs,
                     std::vector<ir::Param> params) {
  if (entry_ && optype != "create" &&
      std::find(entry_->irOps.begin(), entry_->irOps.end(), optype) == entry_->irOps.end()) {
    fail("internal: the converter emits IR op '" + optype + "', which its operator table entry does not declare");
  }
  ir::Op op;
  op.name = uniqueOpName(node_ ? label_ : (outputs.empty() ? optype : outputs.front().name));
  if (node_) opOrigins_[op.name] = node_->op_type() + " node '" + label_ + "'";
  op.optype = std::move(optype);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.params = std::move(params);
  result_.graph.ops.push_back(std::move(op));
}

std::string Converter::reshaped(const std::string& src, const ir::Dims& dims, const std::string& hint) {
  const std::string dst = temporary(hint);
  emit("reshape", {{"src", src}}, {{"dst", dst}}, {integersParam("dims", irDims(dims))});
  return dst;
}

std::string Converter::sliced(const std::string& src, std::size_t axis, int64_t from, int64_t to,
                              const std::string& hint) {
  const ir::Dims dims = tensorDims(src);
  std::vector<int64_t> starts(dims.size(), 0), ends(dims.begin(), dims.end()), steps(dims.size(), 1);
  starts.at(axis) = from;
  ends.at(axis) = to;
  const std::string dst = temporary(hint);
  emit("strided_slice", {{"src", src}}, {{"dst", dst}},
       {integersParam("starts", starts), integersParam("ends", ends), integersParam("steps", steps)});
  return dst;
}

void Converter::reshapeInto(std::size_t outputIndex, const std::string& src, const ir::Dims& dims) {
  emit("reshape", {{"src", src}}, {{"dst", output(outputIndex)}}, {integersParam("dims", irDims(dims))});
  if (dims.empty()) setOnnxDims(outputIndex, dims);
}

void Converter::alias(std::size_t outputIndex, const std::string& irTensor) {
  if (!hasOutput(outputIndex)) return;
  Value& out = values_[node_->output(static_cast<int>(outputIndex))];
  out.tensor = irTensor;
  // An input passed through keeps its ONNX dims (a scalar stays a scalar).
  for (std::size_t i = 0; i < inputCount(); ++i) {
    const Value* in = findInputValue(i);
    if (in == nullptr || in->tensor != irTensor) continue;
    if (in->constant)
      out.onnxDims = in->constant->dims;
    else if (in->onnxDims)
      out.onnxDims = in->onnxDims;
    break;
  }
}

void Converter::forward(std::size_t outputIndex, std::size_t inputIndex) {
  if (!hasOutput(outputIndex)) return;
  values_[node_->output(static_cast<int>(outputIndex))] = inputValue(inputIndex);
}

void Converter::setConstant(std::size_t outputIndex, ImportedTensor value) {
  if (!hasOutput(outputIndex)) return;
  const std::string name = node_->output(static_cast<int>(outputIndex));
  value.name = name;
  Value& slot = values_[name];
  slot = Value{};
  slot.constant = std::make_shared<const ImportedTensor>(std::move(value));
}

std::string Converter::constantTensor(ImportedTensor value, const std::string& wanted,
                                      std::optional<ir::DType> computedAs) {
  if (ir::elementCount(value.dims) <= 0)
    fail("constant '" + wanted + "' has no elements; empty tensors are not supported");
  const std::string name = uniqueTensorName(wanted);
  value.name = name;
  emit("create", {}, {{"dst", name}}, createParams(computedAs.value_or(value.dtype), value.dims, true));
  result_.weights.push_back(std::move(value));
  return name;
}

std::string Converter::zeros(ir::DType dtype, const ir::Dims& dims, const std::string& hint) {
  const std::string name = temporary(hint);
  emit("create", {}, {{"dst", name}}, createParams(dtype, irDims(dims), false));
  return name;
}

std::string Converter::scalar(ir::DType dtype, double value, const std::string& name) {
  return constantTensor(fromDoubles("", dtype, {1}, {value}), label_ + "/" + name);
}

const pb::NodeProto* Converter::soleConsumer(const std::string& value) const {
  if (graphOutputs_.count(value)) return nullptr;
  const auto it = consumers_.find(value);
  if (it == consumers_.end() || it->second.size() != 1) return nullptr;
  return it->second.front();
}

std::vector<const pb::NodeProto*> Converter::consumers(const std::string& value) const {
  if (graphOutputs_.count(value)) return {};
  const auto it = consumers_.find(value);
  return it == consumers_.end() ? std::vector<const pb::NodeProto*>{} : it->second;
}

void Converter::absorb(const pb::NodeProto& consumer, const std::string& consumerOutput, const std::string& irTensor) {
  absorbed_.insert(&consumer);
  if (values_.count(consumerOutput)) fail("output '" + consumerOutput + "' is already defined");
  values_[consumerOutput].tensor = irTensor;
}

void Converter::fail(const std::string& problem) const {
  if (!node_) throw ImportError(problem);
  throw ImportError(node_->op_type() + " node '" + label_ + "': " + problem);
}

int64_t normalizeAxis(const Converter& c, int64_t axis, std::size_t rank, const std::string& attribute) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    c.attributes().fail(attribute, std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> distinctAxes(const Converter& c, const std::vector<int64_t>& axes, std::size_t rank,
                                  const std::string& attribute) {
  std::vector<int64_t> normalized;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    normalized.push_back(normalizeAxis(c, axis, rank, attribute));
    if (seen[static_cast<std::size_t>(normalized.back())]) c.fail("axes repeat");
    seen[static_cast<std::size_t>(normalized.back())] = true;
  }
  return normalized;
}

std::vector<int64_t> Converter::constantIntegers(std::size_t i, const std::string& role) const {
  const ImportedTensor& value = requireConstant(i, role);
  return toInt64s(value);
}

}  // namespace qaic::onnx
