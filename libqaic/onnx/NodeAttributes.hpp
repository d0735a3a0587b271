// SPDX-License-Identifier: Apache-2.0
// Typed access to an ONNX node's attributes; every mismatch names the node and the attribute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace qaic::onnx {

class NodeAttributes {
 public:
  NodeAttributes(const ::onnx::NodeProto& node, std::string nodeLabel);

  bool has(const std::string& name) const { return find(name) != nullptr; }
  const ::onnx::AttributeProto* find(const std::string& name) const;

  int64_t integer(const std::string& name, int64_t fallback) const;
  float number(const std::string& name, float fallback) const;
  std::string string(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> integers(const std::string& name) const;
  std::optional<std::vector<float>> numbers(const std::string& name) const;

  // Throws ImportError "node 'label': attribute 'name' ..."
  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;

 private:
  const ::onnx::AttributeProto& require(const std::string& name, int type) const;
  const ::onnx::NodeProto& node_;
  std::string label_;
};

}  // namespace qaic::onnx
