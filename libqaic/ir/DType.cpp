// SPDX-License-Identifier: Apache-2.0
#include <array>

#include "ir/Graph.hpp"
#include "ir/OpError.hpp"

namespace qaic::ir {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
};

// Order matches the DType enumerators; the weights file stores the index.
constexpr std::array<DTypeInfo, 12> kDTypes{{
    {DType::Double, "TL_DOUBLE", 8},
    {DType::Float, "TL_FLOAT", 4},
    {DType::Float16, "TL_FLOAT16", 2},
    {DType::Int64, "TL_INT64", 8},
    {DType::Int32, "TL_INT32", 4},
    {DType::Int16, "TL_INT16", 2},
    {DType::Int8, "TL_INT8", 1},
    {DType::UInt64, "TL_UINT64", 8},
    {DType::UInt32, "TL_UINT32", 4},
    {DType::UInt16, "TL_UINT16", 2},
    {DType::UInt8, "TL_UINT8", 1},
    {DType::Bool, "TL_BOOL", 1},
}};

const DTypeInfo& info(DType type) {
  const auto index = static_cast<std::size_t>(type);
  if (index >= kDTypes.size()) throw IrError("invalid dtype code " + std::to_string(index));
  return kDTypes[index];
}

}  // namespace

std::string_view dtypeName(DType type) { return info(type).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.type;
  }
  return std::nullopt;
}

std::size_t dtypeSize(DType type) { return info(type).size; }

int64_t elementCount(const Dims& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw IrError("negative dimension in " + formatDims(dims));
    if (__builtin_mul_overflow(count, d, &count)) {
      throw IrError("element count of " + formatDims(dims) + " overflows");
    }
  }
  return count;
}

}  // namespace qaic::ir
