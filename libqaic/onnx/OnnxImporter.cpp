// SPDX-License-Identifier: Apache-2.0
#include "onnx/OnnxImporter.hpp"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <filesystem>
#include <limits>

#include "onnx/Converter.hpp"
#include "onnx/InlineFunctions.hpp"
#include "onnx/OnnxTensor.hpp"

namespace qaic::onnx {
namespace {

// Protobuf parses at most INT_MAX bytes; larger models keep their tensors in external data files.
constexpr std::size_t kMaxModelBytes = static_cast<std::size_t>(std::numeric_limits<int>::max());

}  // namespace

ImportedModel importOnnxBytes(std::span<const std::byte> bytes, const ImportOptions& options,
                              const std::string& sourceName) {
  try {
    if (bytes.size() > kMaxModelBytes) throw ImportError("the model is larger than 2 GiB");
    if (bytes.empty()) throw ImportError("the model is empty");
    ::onnx::ModelProto model;
    google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                  static_cast<int>(bytes.size()));
    if (!model.ParseFromCodedStream(&stream)) throw ImportError("not a valid ONNX ModelProto (protobuf parse failed)");
    if (!model.has_graph()) throw ImportError("the model has no graph");
    inlineLocalFunctions(model);
    return Converter(model, options, sourceName).run();
  } catch (const ImportError& e) {
    throw ImportError(sourceName + ": " + e.what(), e.unsupportedNodes());
  }
}

ImportedModel importOnnxFile(const std::string& path, const ImportOptions& options) {
  const std::string bytes = readFileBounded(path, kMaxModelBytes);
  ImportOptions withDir = options;
  if (withDir.externalDataDir.empty()) {
    const auto parent = std::filesystem::path(path).parent_path();
    withDir.externalDataDir = parent.empty() ? std::string(".") : parent.string();
  }
  return importOnnxBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), withDir, path);
}

std::vector<ir::WeightTensor> weightTensors(const ImportedModel& model) {
  std::vector<ir::WeightTensor> views;
  views.reserve(model.weights.size());
  for (const auto& w : model.weights) views.push_back({w.name, w.dtype, w.dims, w.data});
  return views;
}

}  // namespace qaic::onnx
