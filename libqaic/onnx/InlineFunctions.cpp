// SPDX-License-Identifier: Apache-2.0
#include "onnx/InlineFunctions.hpp"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "onnx/OnnxImporter.hpp"

namespace qaic::onnx {
namespace {

namespace pb = ::onnx;

constexpr int kMaxDepth = 32;
// Calls that each call a function twice double the nodes per level: the expansion is bounded.
constexpr int kMaxNodes = 1 << 17;

std::string functionName(const std::string& domain, const std::string& name) {
  return domain.empty() ? name : domain + "::" + name;
}

class Inliner {
 public:
  explicit Inliner(const pb::ModelProto& model) {
    for (const auto& function : model.functions()) {
      const std::string key = functionName(function.domain(), function.name());
      if (function.name().empty()) throw ImportError("a model-local function has no name");
      if (!functions_.emplace(key, &function).second)
        throw ImportError("model-local function " + key + " is defined twice");
      checkFunction(function, key);
    }
    for (const auto& node : model.graph().node()) {
      for (const auto& name : node.output()) taken_.insert(name);
      taken_.insert(node.name());
    }
    for (const auto& value : model.graph().input()) taken_.insert(value.name());
    for (const auto& value : model.graph().initializer()) taken_.insert(value.name());
  }

  bool any() const { return !functions_.empty(); }

  // The nodes of `nodes` with every call expanded, at `depth` levels of calls.
  void expand(const google::protobuf::RepeatedPtrField<pb::NodeProto>& nodes, int depth,
              google::protobuf::RepeatedPtrField<pb::NodeProto>& out) {
    for (const auto& node : nodes) {
      const auto it = functions_.find(functionName(node.domain(), node.op_type()));
      if (it == functions_.end()) {
        if (out.size() >= kMaxNodes)
          throw ImportError("model-local functions expand to more than " + std::to_string(kMaxNodes) + " nodes");
        *out.Add() = node;
        continue;
      }
      if (depth >= kMaxDepth)
        throw ImportError("model-local function " + it->first + ": calls nested deeper than " +
                          std::to_string(kMaxDepth) + " levels (does it call itself?)");
      google::protobuf::RepeatedPtrField<pb::NodeProto> body;
      instantiate(*it->second, it->first, node, body);
      expand(body, depth + 1, out);
    }
  }

 private:
  static void checkFunction(const pb::FunctionProto& function, const std::string& key) {
    std::set<std::string> defined(function.input().begin(), function.input().end());
    if (defined.size() != static_cast<std::size_t>(function.input_size()))
      throw ImportError("model-local function " + key + ": an input name repeats");
    for (const auto& node : function.node()) {
      for (const auto& name : node.output()) {
        if (!name.empty() && !defined.insert(name).second)
          throw ImportError("model-local function " + key + ": value '" + name + "' is defined twice");
      }
    }
    for (const auto& name : function.output()) {
      if (!defined.count(name))
        throw ImportError("model-local function " + key + ": output '" + name + "' is computed by no node");
    }
  }

  std::string unique(const std::string& wanted) {
    std::string name = wanted;
    for (int k = 1; !taken_.insert(name).second; ++k) name = wanted + "_" + std::to_string(k);
    return name;
  }

  void instantiate(const pb::FunctionProto& function, const std::string& key, const pb::NodeProto& call,
                   google::protobuf::RepeatedPtrField<pb::NodeProto>& body) {
    const std::string callName = call.name().empty() ? function.name() : call.name();
    if (call.input_size() > function.input_size())
      throw ImportError("node '" + callName + "' passes " + std::to_string(call.input_size()) +
                        " inputs to model-local function " + key + ", which takes " +
                        std::to_string(function.input_size()));
    if (call.output_size() > function.output_size())
      throw ImportError("node '" + callName + "' expects " + std::to_string(call.output_size()) +
                        " outputs of model-local function " + key + ", which has " +
                        std::to_string(function.output_size()));
    const std::string prefix = unique(callName + "/");
    std::map<std::string, std::string> renamed;
    // An input the call leaves out is an absent optional input inside the body too.
    for (int i = 0; i < function.input_size(); ++i)
      renamed[function.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < function.output_size(); ++i) {
      // An output the call does not use still gets a name of its own.
      const bool used = i < call.output_size() && !call.output(i).empty();
      renamed[function.output(i)] = used ? call.output(i) : unique(prefix + function.output(i));
    }
    std::map<std::string, const pb::AttributeProto*> given;
    for (const auto& attribute : call.attribute()) given[attribute.name()] = &attribute;
    for (const auto& source : function.node()) {
      pb::NodeProto& node = *body.Add();
      node = source;
      node.set_name(unique(prefix + (source.name().empty() ? source.op_type() : source.name())));
      for (auto& name : *node.mutable_input()) name = valueName(name, prefix, renamed);
      for (auto& name : *node.mutable_output()) name = valueName(name, prefix, renamed);
      // Attributes that refer to the call's: its value under the body's name, or none.
      google::protobuf::RepeatedPtrField<pb::AttributeProto> attributes;
      for (const auto& attribute : source.attribute()) {
        if (attribute.ref_attr_name().empty()) {
          *attributes.Add() = attribute;
          continue;
        }
        const auto found = given.find(attribute.ref_attr_name());
        if (found == given.end()) continue;
        pb::AttributeProto& value = *attributes.Add();
        value = *found->second;
        value.set_name(attribute.name());
      }
      node.mutable_attribute()->Swap(&attributes);
    }
  }

  // A body value: a formal input or output becomes the call's, an empty name stays empty (an
  // absent optional input), any other value of the body gets the call's prefix.
  std::string valueName(const std::string& name, const std::string& prefix,
                        std::map<std::string, std::string>& renamed) {
    if (name.empty()) return name;
    auto it = renamed.find(name);
    if (it != renamed.end()) return it->second;
    return renamed.emplace(name, unique(prefix + name)).first->second;
  }

  std::map<std::string, const pb::FunctionProto*> functions_;
  std::set<std::string> taken_;
};

}  // namespace

void inlineLocalFunctions(pb::ModelProto& model) {
  Inliner inliner(model);
  if (!inliner.any()) return;
  google::protobuf::RepeatedPtrField<pb::NodeProto> expanded;
  inliner.expand(model.graph().node(), 0, expanded);
  model.mutable_graph()->mutable_node()->Swap(&expanded);
  model.clear_functions();
}

}  // namespace qaic::onnx
