// SPDX-License-Identifier: Apache-2.0
#include "OutputCheck.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include <qaic/Float16.hpp>

namespace qaic::runner {
namespace {

template <typename T>
T elementAt(std::span<const uint8_t> bytes, std::size_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
std::string text(T value) {
  std::ostringstream out;
  if constexpr (std::is_floating_point_v<T>) out.precision(9);
  if constexpr (sizeof(T) == 1)
    out << static_cast<int>(value);
  else
    out << value;
  return out.str();
}

template <typename T>
std::optional<Mismatch> compareExact(std::span<const uint8_t> expected, std::span<const uint8_t> actual) {
  for (std::size_t i = 0; i < expected.size() / sizeof(T); ++i) {
    T want = elementAt<T>(expected, i), got = elementAt<T>(actual, i);
    if (want != got) return Mismatch{i, text(want), text(got)};
  }
  return std::nullopt;
}

bool withinTolerance(double want, double got) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  return std::fabs(got - want) <= kAbsoluteTolerance + kRelativeTolerance * std::fabs(want);
}

template <typename Decode>
std::optional<Mismatch> compareFloat(std::size_t count, Decode decode, std::span<const uint8_t> expected,
                                     std::span<const uint8_t> actual) {
  for (std::size_t i = 0; i < count; ++i) {
    float want = decode(expected, i), got = decode(actual, i);
    if (!withinTolerance(want, got)) return Mismatch{i, text(want), text(got)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Mismatch> compareOutput(qaic::rt::QAicBufferDataTypeEnum type, std::span<const uint8_t> expected,
                                      std::span<const uint8_t> actual) {
  using namespace qaic::rt;
  switch (type) {
    case BUFFER_DATA_TYPE_FLOAT:
      return compareFloat(
          expected.size() / 4, [](auto b, std::size_t i) { return elementAt<float>(b, i); }, expected, actual);
    case BUFFER_DATA_TYPE_FLOAT16:
      return compareFloat(
          expected.size() / 2, [](auto b, std::size_t i) { return qaic::rt::halfToFloat(elementAt<uint16_t>(b, i)); },
          expected, actual);
    case BUFFER_DATA_TYPE_INT8Q:
    case BUFFER_DATA_TYPE_INT8: return compareExact<int8_t>(expected, actual);
    case BUFFER_DATA_TYPE_UINT8Q:
    case BUFFER_DATA_TYPE_UINT8: return compareExact<uint8_t>(expected, actual);
    case BUFFER_DATA_TYPE_INT16Q: return compareExact<int16_t>(expected, actual);
    case BUFFER_DATA_TYPE_INT32Q:
    case BUFFER_DATA_TYPE_INT32I: return compareExact<int32_t>(expected, actual);
    case BUFFER_DATA_TYPE_INT64I: return compareExact<int64_t>(expected, actual);
    default: return compareExact<uint8_t>(expected, actual);
  }
}

}  // namespace qaic::runner
