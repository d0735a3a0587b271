// SPDX-License-Identifier: Apache-2.0
#include "ModelBuilder.hpp"

#include <cstring>

namespace qaic::onnx::test {

namespace pb = ::onnx;

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  auto* entry = model_.add_opset_import();
  entry->set_domain("");
  entry->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::input(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<std::string>& symbols, int32_t elemType) {
  auto* value = model_.mutable_graph()->add_input();
  value->set_name(name);
  auto* type = value->mutable_type()->mutable_tensor_type();
  type->set_elem_type(elemType);
  auto* shape = type->mutable_shape();
  std::size_t nextSymbol = 0;
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d == 0 && nextSymbol < symbols.size()) {
      dim->set_dim_param(symbols[nextSymbol++]);
    } else {
      dim->set_dim_value(d);
    }
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name) {
  auto* value = model_.mutable_graph()->add_output();
  value->set_name(name);
  value->mutable_type()->mutable_tensor_type()->set_elem_type(pb::TensorProto::FLOAT);
  return *this;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<float>& values) {
  auto* tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(pb::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->add_dims(d);
  for (float v : values) tensor->add_float_data(v);
  return *this;
}

ModelBuilder& ModelBuilder::initializerInt64(const std::string& name, const std::vector<int64_t>& dims,
                                             const std::vector<int64_t>& values) {
  auto* tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(pb::TensorProto::INT64);
  for (int64_t d : dims) tensor->add_dims(d);
  for (int64_t v : values) tensor->add_int64_data(v);
  return *this;
}

pb::NodeProto& ModelBuilder::node(const std::string& opType, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(opType);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

std::string ModelBuilder::bytes() const { return model_.SerializeAsString(); }

ImportedModel ModelBuilder::import(const ImportOptions& options) const {
  const std::string data = bytes();
  return importOnnxBytes(std::as_bytes(std::span(data.data(), data.size())), options, "test.onnx");
}

std::string importError(const ModelBuilder& b, const ImportOptions& options) {
  try {
    b.import(options);
  } catch (const ImportError& e) {
    return e.what();
  }
  return "<no error>";
}

void setAttr(pb::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(value);
}

void setAttr(pb::NodeProto& node, const std::string& name, float value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::FLOAT);
  a->set_f(value);
}

void setAttr(pb::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void setAttr(pb::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::STRING);
  a->set_s(value);
}

const ir::Op* findOp(const ir::Graph& graph, const std::string& optype, std::size_t nth) {
  for (const auto& op : graph.ops) {
    if (op.optype == optype && nth-- == 0) return &op;
  }
  return nullptr;
}

std::size_t countOps(const ir::Graph& graph, const std::string& optype) {
  std::size_t n = 0;
  for (const auto& op : graph.ops) n += op.optype == optype;
  return n;
}

std::vector<double> numbersOf(const ir::Op& op, const std::string& argName) { return op.numbers(argName); }

const ImportedTensor* findWeight(const ImportedModel& model, const std::string& name) {
  for (const auto& w : model.weights) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

std::vector<float> floatsOf(const ImportedTensor& tensor) {
  std::vector<float> values(tensor.data.size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), tensor.data.data(), values.size() * sizeof(float));
  return values;
}

}  // namespace qaic::onnx::test
