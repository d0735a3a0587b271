// SPDX-License-Identifier: Apache-2.0
// Test helper: builds JSON IR graphs op by op, runs them on a HostProgram and reads typed results.
#pragma once

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "HostExecutor.hpp"
#include "IrGraphs.hpp"
#include "base/CacheLineAllocator.hpp"

namespace qaic::kernels::test {

// Host memory that starts on a cache line, as the emulator's copy of a container holds the
// constants a program reads in place.
template <typename T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

using Json = nlohmann::json;

// conv2d attributes of a 3x3 kernel, stride 1, padded by 1 on every side: the output keeps the
// input's height and width.
inline Json sameSizeConv3x3(int64_t group = 1) {
  return {{"group", group},          {"size", {3, 3}},     {"stride", {1, 1}},
          {"padding", {1, 1, 1, 1}}, {"dilation", {1, 1}}, {"autopad", "NOTSET"}};
}

struct HostTensor {
  ir::DType dtype = ir::DType::Float;
  ir::Dims dims;
  std::vector<std::byte> bytes;

  template <typename T>
  static HostTensor of(ir::DType dtype, ir::Dims dims, const std::vector<T>& values) {
    HostTensor t{dtype, std::move(dims), std::vector<std::byte>(values.size() * sizeof(T))};
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

class GraphBuilder {
 public:
  // ins / outs: {{"arg_name", "tensor"}, ...}; params: {{"arg_name", value}, ...}.
  GraphBuilder& op(const std::string& name, const std::string& optype,
                   std::vector<std::pair<std::string, std::string>> ins,
                   std::vector<std::pair<std::string, std::string>> outs, Json params = Json::object()) {
    Json o{{"name", name},
           {"optype", optype},
           {"tensors_in", Json::array()},
           {"tensors_out", Json::array()},
           {"params", Json::array()}};
    for (auto& [arg, t] : ins) o["tensors_in"].push_back({{"arg_name", arg}, {"name", t}});
    for (auto& [arg, t] : outs) o["tensors_out"].push_back({{"arg_name", arg}, {"name", t}});
    for (auto& [k, v] : params.items()) o["params"].push_back({{"arg_name", k}, {"value", v}});
    ops_.push_back(o);
    return *this;
  }
  GraphBuilder& create(const std::string& tensor, const std::string& dtype, const ir::Dims& dims,
                       const std::vector<double>& data, std::vector<double> ran = {0, 0}, bool fromFile = false) {
    return op("create_" + tensor, "create", {}, {{"dst", tensor}},
              {{"dtype", dtype},
               {"dims", dims},
               {"data", data.empty() ? std::vector<double>{0} : data},
               {"ran", ran},
               {"from_file", fromFile}});
  }
  GraphBuilder& input(const std::string& tensor, const std::string& dtype, const ir::Dims& dims) {
    io_.push_back({{"name", tensor}, {"tensor", tensor}, {"direction", "in"}, {"dtype", dtype}, {"dims", dims}});
    return *this;
  }
  GraphBuilder& output(const std::string& tensor, const std::string& dtype, const ir::Dims& dims) {
    io_.push_back({{"name", tensor}, {"tensor", tensor}, {"direction", "out"}, {"dtype", dtype}, {"dims", dims}});
    return *this;
  }
  std::string json() const {
    Json g{{"ops", ops_}};
    if (!io_.empty()) g["io"] = io_;
    return g.dump();
  }
  ir::Graph graph() const {
    ir::Graph g = ir::parseGraph(json(), "test.json");
    ir::inferShapes(g);
    return g;
  }

 private:
  Json ops_ = Json::array();
  Json io_ = Json::array();
};

// Runs `graph` once; outputs are sized from the io section.
inline std::vector<HostTensor> runGraph(const ir::Graph& graph, const std::vector<HostTensor>& inputs = {},
                                        ConstantLookup constants = nullptr, BuildOptions options = {}) {
  auto program = HostProgram::build(graph, std::move(constants), options);
  std::vector<TensorView> in;
  for (const auto& t : inputs) in.push_back({t.dtype, t.dims, const_cast<std::byte*>(t.bytes.data()), t.bytes.size()});
  std::vector<HostTensor> out;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    out.push_back(
        {io.dtype, io.dims,
         std::vector<std::byte>(static_cast<std::size_t>(ir::elementCount(io.dims)) * ir::dtypeSize(io.dtype))});
  }
  std::vector<TensorView> views;
  for (auto& t : out) views.push_back({t.dtype, t.dims, t.bytes.data(), t.bytes.size()});
  program->run(in, views);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].dims = views[i].dims;
    out[i].bytes.resize(static_cast<std::size_t>(ir::elementCount(views[i].dims)) * ir::dtypeSize(out[i].dtype));
  }
  return out;
}

inline std::vector<float> randomFloats(std::size_t n, uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<double> toDoubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace qaic::kernels::test
