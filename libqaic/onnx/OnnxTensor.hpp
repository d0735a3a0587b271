// SPDX-License-Identifier: Apache-2.0
// ONNX TensorProto <-> ImportedTensor: the one place that decodes ONNX tensor payloads, used by
// the importer for initializers and Constant nodes and by the conformance runner for .pb files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "onnx/OnnxImporter.hpp"

namespace onnx {
class TensorProto;
}

namespace qaic::onnx {

// The IR element type of an ONNX TensorProto.DataType value; nullopt for types the IR lacks
// (string, complex, bfloat16).
std::optional<ir::DType> dtypeFromOnnx(int32_t onnxType);
std::string_view onnxTypeName(int32_t onnxType);

// Decodes dims and data (raw_data, the typed repeated field, or external data read from the file
// its `location` names under `externalDataDir`) after checking every count and byte size against
// the dims. `what` names the tensor in errors ("initializer 'w'"). Throws ImportError.
ImportedTensor tensorFromProto(const ::onnx::TensorProto& proto, const std::string& what,
                               const std::string& externalDataDir = {});

// A serialized TensorProto (the backend test data's input_*.pb / output_*.pb).
ImportedTensor parseTensorBytes(std::span<const std::byte> bytes, const std::string& sourceName);
ImportedTensor readTensorFile(const std::string& path);

// Reads a whole file of at most maxBytes; throws ImportError naming the path otherwise.
std::string readFileBounded(const std::string& path, std::size_t maxBytes);

}  // namespace qaic::onnx
