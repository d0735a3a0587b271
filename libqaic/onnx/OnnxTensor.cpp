// SPDX-License-Identifier: Apache-2.0
#include "onnx/OnnxTensor.hpp"

#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <google/protobuf/io/coded_stream.h>

#include "base/MappedFile.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

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
  // Zero dims are bounded as if they were 1, so that no product of a subset of dims overflows
  // later.
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

namespace {

// External data (the ONNX convention for models over 2 GiB): `location` is a file relative to
// the model's directory, `offset` and `length` a byte range of it. The range must hold exactly
// the tensor's bytes; the path may not leave the directory.
// One read-only mapping per data file (by device and inode, so a replaced file is mapped anew)
// while any tensor views it: a model's thousands of tensors share one file's mapping.
std::shared_ptr<const MappedFile> mapDataFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ImportError(what + ": external data file '" + path + "': " + std::strerror(errno));
  static std::mutex mutex;
  static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<const MappedFile>> mapped;
  std::lock_guard lock(mutex);
  auto& slot = mapped[{st.st_dev, st.st_ino}];
  if (auto file = slot.lock(); file && file->size() == static_cast<uint64_t>(st.st_size)) return file;
  Result<MappedFile> file = MappedFile::openReadOnly(path);
  if (!file) throw ImportError(what + ": external data file '" + path + "': " + file.message());
  auto shared = std::make_shared<const MappedFile>(std::move(file).value());
  slot = shared;
  return shared;
}

TensorBytes readExternalData(const pb::TensorProto& proto, const std::string& what, const std::string& dir,
                             std::size_t bytes) {
  if (dir.empty()) throw ImportError(what + ": external data can only be read from a model file's directory");
  std::string location;
  std::optional<uint64_t> offset, length;
  const auto number = [&](const std::string& key, const std::string& value) {
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      throw ImportError(what + ": external data " + key + " '" + value + "' is not a byte count");
    return n;
  };
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      offset = number("offset", entry.value());
    } else if (entry.key() == "length") {
      length = number("length", entry.value());
    } else if (entry.key() != "checksum") {
      throw ImportError(what + ": external data key '" + entry.key() + "' is not one of location, offset, length");
    }
  }
  const std::filesystem::path relative(location);
  if (location.empty()) throw ImportError(what + ": external data has no location");
  if (relative.is_absolute() || std::any_of(relative.begin(), relative.end(), [](const auto& p) { return p == ".."; }))
    throw ImportError(what + ": external data location '" + location + "' leaves the model's directory");
  if (length && *length != bytes)
    throw ImportError(what + ": external data length " + std::to_string(*length) + " but dims need " +
                      std::to_string(bytes) + " bytes");
  const std::string path = (std::filesystem::path(dir) / relative).string();
  const std::shared_ptr<const MappedFile> file = mapDataFile(path, what);
  const uint64_t size = file->size();
  const uint64_t start = offset.value_or(0);
  if (start > size || size - start < bytes)
    throw ImportError(what + ": external data file '" + path + "' holds " + std::to_string(size) +
                      " bytes; the tensor needs " + std::to_string(bytes) + " from offset " + std::to_string(start));
  return TensorBytes::view({file->data() + start, bytes}, file);
}

}  // namespace

ImportedTensor tensorFromProto(const pb::TensorProto& proto, const std::string& what,
                               const std::string& externalDataDir) {
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
  const bool external = proto.data_location() == pb::TensorProto::EXTERNAL;
  if (external || proto.has_raw_data()) {
    if (external) {
      tensor.data = readExternalData(proto, what, externalDataDir, count * elementSize);
    } else {
      const std::string& raw = proto.raw_data();
      if (raw.size() != count * elementSize) {
        throw ImportError(what + ": raw_data holds " + std::to_string(raw.size()) + " bytes but dims need " +
                          std::to_string(count * elementSize));
      }
      const auto* first = reinterpret_cast<const std::byte*>(raw.data());
      tensor.data = std::vector<std::byte>(first, first + raw.size());
    }
    const bool canonical = *dtype != ir::DType::Bool ||
                           std::all_of(tensor.data.begin(), tensor.data.end(),
                                       [](std::byte b) { return b == std::byte{0} || b == std::byte{1}; });
    if (!canonical) {
      std::byte* bools = tensor.data.mutableData();
      for (std::size_t i = 0; i < tensor.data.size(); ++i) bools[i] = std::byte{bools[i] != std::byte{0}};  // 0/1
    }
    return tensor;
  }
  std::vector<std::byte> values;
  copyTypedField(proto, *dtype, count, what, values);
  tensor.data = std::move(values);
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
