#include "onnx/OnnxTensor.hpp"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

namespace qaic::onnx {
namespace {

namespace pb = ::onnx;

// Largest file the importer reads (2 GiB - 1): protobuf parses at most INT_MAX bytes.
constexpr std::size_t kMaxProtoBytes = static_cast<std::size_t>(std::numeric_limits<int>::max());

std::size_t checkedElementCount(const pb::TensorProto& proto, const std::string& what, ir::Dims& dims) {
  if (static_cast<std::size_t>(proto.dims_size()) > ir::kMaxRank) {
    throw ImportError(what + ": rank " + std::to_string(proto.dims_size()) + " exceeds the maximum of " +
                      std::to_string(ir::kMaxRank));
  }
  // Zero dims are bounded as if they were 1, so that no product of a subset of dims overflows later.
  std::size_t bound = 1;
  bool empty = false;
  for (int i = 0; i < proto.dims_size(); ++i) {
    const int64_t d = proto.dims(i);
    if (d < 0) throw ImportError(what + ": dim " + std::to_string(i) + " is negative (" + std::to_string(d) + ")");
    const auto factor = static_cast<std::size_t>(std::max<int64_t>(d, 1));
    if (bound > kMaxProtoBytes / factor) throw ImportError(what + ": dims describe more than 2 GiB of elements");
    bound *= factor;
    empty = empty || d == 0;
    dims.push_back(d);
  }
  return empty ? 0 : bound;
}

template <typename Field>
void checkFieldCount(const Field& field, std::size_t count, const std::string& what, const char* fieldName) {
  if (static_cast<std::size_t>(field.size()) != count) {
    throw ImportError(what + ": " + fieldName + " holds " + std::to_string(field.size()) + " values but dims need " +
                      std::to_string(count));
  }
}

// Stores each repeated-field value narrowed to the element type T, after checking that the field
// holds as many values as the dims need.
template <typename T, typename Field>
void copyNarrowed(const Field& field, std::size_t count, const std::string& what, const char* fieldName,
                  std::vector<std::byte>& out) {
  checkFieldCount(field, count, what, fieldName);
  out.resize(static_cast<std::size_t>(field.size()) * sizeof(T));
  for (int i = 0; i < field.size(); ++i) {
    const T value = static_cast<T>(field.Get(i));
    std::memcpy(out.data() + static_cast<std::size_t>(i) * sizeof(T), &value, sizeof(T));
  }
}

void copyTypedField(const pb::TensorProto& proto, ir::DType dtype, std::size_t count, const std::string& what,
                    std::vector<std::byte>& out) {
  switch (dtype) {
    case ir::DType::Float: return copyNarrowed<float>(proto.float_data(), count, what, "float_data", out);
    case ir::DType::Double: return copyNarrowed<double>(proto.double_data(), count, what, "double_data", out);
    case ir::DType::Int64: return copyNarrowed<int64_t>(proto.int64_data(), count, what, "int64_data", out);
    case ir::DType::UInt64: return copyNarrowed<uint64_t>(proto.uint64_data(), count, what, "uint64_data", out);
    case ir::DType::UInt32: return copyNarrowed<uint32_t>(proto.uint64_data(), count, what, "uint64_data", out);
    case ir::DType::Int32: return copyNarrowed<int32_t>(proto.int32_data(), count, what, "int32_data", out);
    case ir::DType::Int16: return copyNarrowed<int16_t>(proto.int32_data(), count, what, "int32_data", out);
    case ir::DType::Int8: return copyNarrowed<int8_t>(proto.int32_data(), count, what, "int32_data", out);
    case ir::DType::UInt16:
    case ir::DType::Float16:  // int32_data carries the IEEE half bit patterns
      return copyNarrowed<uint16_t>(proto.int32_data(), count, what, "int32_data", out);
    case ir::DType::UInt8: return copyNarrowed<uint8_t>(proto.int32_data(), count, what, "int32_data", out);
    case ir::DType::Bool: {
      checkFieldCount(proto.int32_data(), count, what, "int32_data");
      out.resize(count);
      for (std::size_t i = 0; i < count; ++i) out[i] = std::byte{proto.int32_data(static_cast<int>(i)) != 0};
      return;
    }
  }
  throw ImportError(what + ": unhandled element type");
}

}  // namespace

std::optional<ir::DType> dtypeFromOnnx(int32_t onnxType) {
  switch (onnxType) {
    case pb::TensorProto::FLOAT: return ir::DType::Float;
    case pb::TensorProto::UINT8: return ir::DType::UInt8;
    case pb::TensorProto::INT8: return ir::DType::Int8;
    case pb::TensorProto::UINT16: return ir::DType::UInt16;
    case pb::TensorProto::INT16: return ir::DType::Int16;
    case pb::TensorProto::INT32: return ir::DType::Int32;
    case pb::TensorProto::INT64: return ir::DType::Int64;
    case pb::TensorProto::BOOL: return ir::DType::Bool;
    case pb::TensorProto::FLOAT16: return ir::DType::Float16;
    case pb::TensorProto::DOUBLE: return ir::DType::Double;
    case pb::TensorProto::UINT32: return ir::DType::UInt32;
    case pb::TensorProto::UINT64: return ir::DType::UInt64;
    default: return std::nullopt;
  }
}

std::string_view onnxTypeName(int32_t onnxType) {
  if (pb::TensorProto::DataType_IsValid(onnxType)) {
    return pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(onnxType));
  }
  return "<invalid>";
}

ImportedTensor tensorFromProto(const pb::TensorProto& proto, const std::string& what) {
  if (proto.data_location() == pb::TensorProto::EXTERNAL) {
    throw ImportError(what + ": external data files are not supported; save the model with its data embedded");
  }
  if (proto.has_segment()) throw ImportError(what + ": segmented tensors are not supported");
  const auto dtype = dtypeFromOnnx(proto.data_type());
  if (!dtype) {
    throw ImportError(what + ": element type " + std::string(onnxTypeName(proto.data_type())) + " (" +
                      std::to_string(proto.data_type()) + ") is not supported");
  }
  ImportedTensor tensor;
  tensor.name = proto.name();
  tensor.dtype = *dtype;
  const std::size_t count = checkedElementCount(proto, what, tensor.dims);
  const std::size_t elementSize = ir::dtypeSize(*dtype);
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != count * elementSize) {
      throw ImportError(what + ": raw_data holds " + std::to_string(raw.size()) + " bytes but dims need " +
                        std::to_string(count * elementSize));
    }
    tensor.data.resize(raw.size());
    if (!raw.empty()) std::memcpy(tensor.data.data(), raw.data(), raw.size());
    if (*dtype == ir::DType::Bool) {
      for (auto& b : tensor.data) b = std::byte{b != std::byte{0}};  // canonical 0/1 bools
    }
    return tensor;
  }
  copyTypedField(proto, *dtype, count, what, tensor.data);
  return tensor;
}

ImportedTensor parseTensorBytes(std::span<const std::byte> bytes, const std::string& sourceName) {
  if (bytes.size() > kMaxProtoBytes) throw ImportError(sourceName + ": larger than 2 GiB");
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  pb::TensorProto proto;
  if (!proto.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    throw ImportError(sourceName + ": not a valid ONNX TensorProto");
  }
  return tensorFromProto(proto, sourceName);
}

ImportedTensor readTensorFile(const std::string& path) {
  const std::string bytes = readFileBounded(path, kMaxProtoBytes);
  return parseTensorBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), path);
}

std::string readFileBounded(const std::string& path, std::size_t maxBytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ImportError(path + ": cannot open file");
  const std::streamoff size = in.tellg();
  if (size < 0) throw ImportError(path + ": cannot determine the file size");
  if (static_cast<std::size_t>(size) > maxBytes) {
    throw ImportError(path + ": file is " + std::to_string(size) + " bytes, more than the limit of " +
                      std::to_string(maxBytes));
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) throw ImportError(path + ": read failed");
  return bytes;
}

}  // namespace qaic::onnx
