// SPDX-License-Identifier: Apache-2.0
#include "onnx/ConstantMath.hpp"

#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/format/Half.hpp"

namespace qaic::onnx {
namespace {

template <typename T>
T load(const ImportedTensor& tensor, std::size_t i) {
  T value;
  std::memcpy(&value, tensor.data.data() + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void store(ImportedTensor& tensor, std::size_t i, T value) {
  std::memcpy(tensor.data.mutableData() + i * sizeof(T), &value, sizeof(T));
}

// Every element of `tensor` converted to Out.
template <typename Out>
std::vector<Out> convertAll(const ImportedTensor& tensor) {
  const std::size_t size = ir::dtypeSize(tensor.dtype);
  const std::size_t count = size == 0 ? 0 : tensor.data.size() / size;
  std::vector<Out> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (tensor.dtype) {
      case ir::DType::Double: out[i] = static_cast<Out>(load<double>(tensor, i)); break;
      case ir::DType::Float: out[i] = static_cast<Out>(load<float>(tensor, i)); break;
      case ir::DType::Int64: out[i] = static_cast<Out>(load<int64_t>(tensor, i)); break;
      case ir::DType::Int32: out[i] = static_cast<Out>(load<int32_t>(tensor, i)); break;
      case ir::DType::Int16: out[i] = static_cast<Out>(load<int16_t>(tensor, i)); break;
      case ir::DType::Int8: out[i] = static_cast<Out>(load<int8_t>(tensor, i)); break;
      case ir::DType::UInt64: out[i] = static_cast<Out>(load<uint64_t>(tensor, i)); break;
      case ir::DType::UInt32: out[i] = static_cast<Out>(load<uint32_t>(tensor, i)); break;
      case ir::DType::UInt16: out[i] = static_cast<Out>(load<uint16_t>(tensor, i)); break;
      case ir::DType::UInt8: out[i] = static_cast<Out>(load<uint8_t>(tensor, i)); break;
      case ir::DType::Bool: out[i] = static_cast<Out>(load<uint8_t>(tensor, i) != 0); break;
      case ir::DType::Float16: out[i] = static_cast<Out>(kernels::halfToFloat(load<uint16_t>(tensor, i))); break;
    }
  }
  return out;
}

// double -> integer with saturation, so that no input value is undefined behaviour.
template <typename T>
T narrow(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    if (!(value == value)) return T{0};
    if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

template <typename In>
ImportedTensor build(std::string name, ir::DType dtype, ir::Dims dims, const std::vector<In>& values) {
  ImportedTensor tensor{std::move(name), dtype, std::move(dims), {}};
  tensor.data.resize(values.size() * ir::dtypeSize(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const In v = values[i];
    switch (dtype) {
      case ir::DType::Double: store(tensor, i, static_cast<double>(v)); break;
      case ir::DType::Float: store(tensor, i, static_cast<float>(v)); break;
      case ir::DType::Int64: store(tensor, i, static_cast<int64_t>(v)); break;
      case ir::DType::Int32: store(tensor, i, static_cast<int32_t>(v)); break;
      case ir::DType::Int16: store(tensor, i, static_cast<int16_t>(v)); break;
      case ir::DType::Int8: store(tensor, i, static_cast<int8_t>(v)); break;
      case ir::DType::UInt64: store(tensor, i, static_cast<uint64_t>(v)); break;
      case ir::DType::UInt32: store(tensor, i, static_cast<uint32_t>(v)); break;
      case ir::DType::UInt16: store(tensor, i, static_cast<uint16_t>(v)); break;
      case ir::DType::UInt8: store(tensor, i, static_cast<uint8_t>(v)); break;
      case ir::DType::Bool: store(tensor, i, static_cast<uint8_t>(v != 0)); break;
      case ir::DType::Float16: store(tensor, i, kernels::floatToHalf(static_cast<float>(v))); break;
    }
  }
  return tensor;
}

}  // namespace

bool isIntegral(ir::DType dtype) {
  return dtype != ir::DType::Float && dtype != ir::DType::Double && dtype != ir::DType::Float16;
}

std::vector<double> toDoubles(const ImportedTensor& tensor) { return convertAll<double>(tensor); }

std::vector<int64_t> toInt64s(const ImportedTensor& tensor) {
  if (!isIntegral(tensor.dtype)) {
    std::vector<int64_t> out;
    for (double v : convertAll<double>(tensor)) out.push_back(narrow<int64_t>(v));
    return out;
  }
  return convertAll<int64_t>(tensor);
}

double scalarValue(const ImportedTensor& tensor, const std::string& what) {
  const auto values = toDoubles(tensor);
  if (values.size() != 1)
    throw ImportError(what + " must hold exactly one value, not " + std::to_string(values.size()));
  return values[0];
}

ImportedTensor fromDoubles(std::string name, ir::DType dtype, ir::Dims dims, const std::vector<double>& values) {
  if (isIntegral(dtype)) {
    std::vector<int64_t> ints;
    ints.reserve(values.size());
    for (double v : values) ints.push_back(narrow<int64_t>(v));
    return build(std::move(name), dtype, std::move(dims), ints);
  }
  return build(std::move(name), dtype, std::move(dims), values);
}

ImportedTensor fromInt64s(std::string name, ir::DType dtype, ir::Dims dims, const std::vector<int64_t>& values) {
  return build(std::move(name), dtype, std::move(dims), values);
}

}  // namespace qaic::onnx
