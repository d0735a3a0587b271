// SPDX-License-Identifier: Apache-2.0
// toJson: the Graph back to the JSON IR, in the form parseGraph reads.
#include <cmath>
#include <nlohmann/json.hpp>

#include "ir/IoSection.hpp"

namespace qaic::ir {
namespace {

using Json = nlohmann::json;

// Integral values are written as JSON integers so dims and axes read naturally.
Json numberJson(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 9.0e15) {
    return static_cast<int64_t>(value);
  }
  return value;
}

Json paramJson(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          return numberJson(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          Json array = Json::array();
          for (double element : v) array.push_back(numberJson(element));
          return array;
        } else {
          return Json(v);
        }
      },
      value);
}

Json tensorsJson(const std::vector<TensorArg>& args) {
  Json array = Json::array();
  for (const auto& arg : args) array.push_back({{"arg_name", arg.argName}, {"name", arg.name}});
  return array;
}

Json opJson(const Op& op) {
  Json params = Json::array();
  for (const auto& param : op.params) {
    params.push_back({{"arg_name", param.argName}, {"value", paramJson(param.value)}});
  }
  return {{"name", op.name},
          {"optype", op.optype},
          {"tensors_in", tensorsJson(op.inputs)},
          {"tensors_out", tensorsJson(op.outputs)},
          {"params", params}};
}

Json ioJson(const IoBuffer& buffer) {
  return {{"name", buffer.bufferName},
          {"tensor", buffer.tensor},
          {"direction", buffer.direction == Direction::In ? "in" : "out"},
          {"dtype", dtypeName(buffer.dtype)},
          {"dims", buffer.dims},
          {"layout", userLayoutName(buffer.userLayout)},
          {"is_partial_allowed", buffer.isPartialAllowed},
          {"skip_partial_header", buffer.skipPartialHeader},
          {"allow_skip", buffer.allowSkip},
          {"device_format",
           {{"layout", deviceLayoutName(buffer.deviceFormat.layout)},
            {"dtype", dtypeName(buffer.deviceFormat.elementType)}}}};
}

}  // namespace

std::string toJson(const Graph& graph, bool pretty) {
  Json root = Json::object();
  Json ops = Json::array();
  for (const auto& op : graph.ops) ops.push_back(opJson(op));
  root["ops"] = std::move(ops);
  if (!graph.io.empty()) {
    Json io = Json::array();
    for (const auto& buffer : graph.io) io.push_back(ioJson(buffer));
    root["io"] = std::move(io);
  }
  if (!graph.allowedShapes.empty()) {
    Json shapes = Json::array();
    for (const auto& combination : graph.allowedShapes) {
      Json entry = Json::object();
      for (std::size_t i = 0; i < combination.size() && i < graph.io.size(); ++i) {
        entry[graph.io[i].bufferName] = combination[i];
      }
      shapes.push_back(std::move(entry));
    }
    root["allowed_shapes"] = std::move(shapes);
  }
  if (!graph.weightsFile.empty()) root["weights"] = graph.weightsFile;
  return root.dump(pretty ? 2 : -1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace qaic::ir
