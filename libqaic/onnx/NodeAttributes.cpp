// SPDX-License-Identifier: Apache-2.0
#include "onnx/NodeAttributes.hpp"

#include <onnx/onnx_pb.h>

#include "onnx/OnnxImporter.hpp"

namespace qaic::onnx {

namespace pb = ::onnx;

NodeAttributes::NodeAttributes(const pb::NodeProto& node, std::string nodeLabel)
    : node_(node), label_(std::move(nodeLabel)) {}

const pb::AttributeProto* NodeAttributes::find(const std::string& name) const {
  for (const auto& attribute : node_.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

void NodeAttributes::fail(const std::string& name, const std::string& problem) const {
  throw ImportError(node_.op_type() + " node '" + label_ + "': attribute '" + name + "' " + problem);
}

const pb::AttributeProto& NodeAttributes::require(const std::string& name, int type) const {
  const pb::AttributeProto* attribute = find(name);
  if (attribute->type() != type) {
    fail(name, "has type " + pb::AttributeProto::AttributeType_Name(attribute->type()) + ", expected " +
                   pb::AttributeProto::AttributeType_Name(static_cast<pb::AttributeProto::AttributeType>(type)));
  }
  return *attribute;
}

int64_t NodeAttributes::integer(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  return require(name, pb::AttributeProto::INT).i();
}

float NodeAttributes::number(const std::string& name, float fallback) const {
  if (!has(name)) return fallback;
  return require(name, pb::AttributeProto::FLOAT).f();
}

std::string NodeAttributes::string(const std::string& name, const std::string& fallback) const {
  if (!has(name)) return fallback;
  return require(name, pb::AttributeProto::STRING).s();
}

std::optional<std::vector<int64_t>> NodeAttributes::integers(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  const auto& values = require(name, pb::AttributeProto::INTS).ints();
  return std::vector<int64_t>(values.begin(), values.end());
}

std::optional<std::vector<float>> NodeAttributes::numbers(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  const auto& values = require(name, pb::AttributeProto::FLOATS).floats();
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace qaic::onnx
