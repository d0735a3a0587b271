// SPDX-License-Identifier: Apache-2.0
#include "NodeTestCase.hpp"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <set>

#include "HostRun.hpp"
#include "ir/Graph.hpp"
#include "kernels/HostProgram.hpp"
#include "onnx/OnnxTensor.hpp"

namespace qaic::conformance {
namespace {

namespace fs = std::filesystem;
namespace pb = ::onnx;

pb::ModelProto loadModel(const std::string& caseDir) {
  const std::string path = caseDir + "/model.onnx";
  const std::string bytes = onnx::readFileBounded(path, std::size_t{1} << 30);
  pb::ModelProto model;
  if (!model.ParseFromString(bytes)) throw onnx::ImportError(path + ": not a valid ONNX model");
  return model;
}

// Names of graph inputs that feed operator parameters rather than data.
std::set<std::string> parameterInputs(const pb::GraphProto& graph) {
  static const std::map<std::string, std::set<int>> kParameterSlots = {
      {"Reshape", {1}},     {"Clip", {1, 2}},         {"Pad", {1, 2, 3}},
      {"Dropout", {1, 2}},  {"Slice", {1, 2, 3, 4}},  {"Squeeze", {1}},
      {"Unsqueeze", {1}},   {"Split", {1}},           {"Expand", {1}},
      {"Tile", {1}},        {"ReduceSum", {1}},       {"Resize", {1, 2, 3}},
      {"Range", {0, 1, 2}}, {"ConstantOfShape", {0}}, {"Trilu", {1}},
      {"TopK", {1}},        {"CumSum", {1}},          {"OneHot", {1, 2}}};
  std::set<std::string> names;
  for (const auto& node : graph.node()) {
    const auto it = kParameterSlots.find(node.op_type());
    if (it == kParameterSlots.end()) continue;
    for (int slot : it->second) {
      if (slot < node.input_size() && !node.input(slot).empty()) names.insert(node.input(slot));
    }
  }
  return names;
}

std::vector<std::string> dataSets(const std::string& caseDir) {
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(caseDir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      dirs.push_back(entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::string runDataSet(const pb::ModelProto& original, const std::string& caseDir, const std::string& dataDir,
                       int threads) {
  pb::ModelProto model = original;
  pb::GraphProto& graph = *model.mutable_graph();
  const std::set<std::string> parameters = parameterInputs(graph);
  std::map<std::string, onnx::ImportedTensor> inputData;
  for (int j = 0; j < graph.input_size(); ++j) {
    const std::string file = dataDir + "/input_" + std::to_string(j) + ".pb";
    const std::string& name = graph.input(j).name();
    if (parameters.count(name)) {
      pb::TensorProto proto;
      if (!proto.ParseFromString(onnx::readFileBounded(file, std::size_t{1} << 30)))
        return file + ": not a TensorProto";
      proto.set_name(name);
      *graph.add_initializer() = proto;
    } else {
      inputData[name] = onnx::readTensorFile(file);
    }
  }
  const std::string bytes = model.SerializeAsString();
  const onnx::ImportedModel imported = onnx::importOnnxBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), {},
                                                             caseDir + "/model.onnx");

  std::vector<const onnx::ImportedTensor*> inputs;
  for (const auto& io : imported.graph.io) {
    if (io.direction == ir::Direction::In) inputs.push_back(&inputData.at(io.bufferName));
  }
  HostRun program(imported, threads);
  const auto outputs = program.run(inputs);

  std::size_t next = 0;
  for (const auto& io : imported.graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    int j = 0;
    while (j < graph.output_size() && graph.output(j).name() != io.bufferName) ++j;
    const auto expected = onnx::readTensorFile(dataDir + "/output_" + std::to_string(j) + ".pb");
    const std::string problem = compareTensors(outputs[next++], expected, "output '" + io.bufferName + "'");
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace

NodeTestResult runNodeTest(const std::string& caseDir, int threads) {
  try {
    const pb::ModelProto model = loadModel(caseDir);
    const auto sets = dataSets(caseDir);
    if (sets.empty()) return {false, "no test_data_set_* directory"};
    for (const auto& dataDir : sets) {
      const std::string problem = runDataSet(model, caseDir, dataDir, threads);
      if (!problem.empty()) return {false, fs::path(dataDir).filename().string() + ": " + problem};
    }
    return {true, ""};
  } catch (const std::exception& e) {  // ImportError, IrError, ExecutionError: the case fails with the reason
    return {false, e.what()};
  }
}

}  // namespace qaic::conformance
