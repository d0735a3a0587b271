// SPDX-License-Identifier: Apache-2.0
// Compile-time dispatch over the IR's element types and the one value-conversion rule of the
// kernels (JSON numbers, create data, device formats and elew all convert the same way):
// to an integer truncate toward zero and saturate (NaN -> 0); to float saturate at +-FLT_MAX;
// to bool nonzero -> 1. TL_BOOL is stored as one byte: kernels write 0 or 1 and read any
// nonzero byte as true (a user's mask may hold other values).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ir/Graph.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels {

struct Half {
  uint16_t bits;
};
struct Bool8 {
  uint8_t value;
};

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T>;
template <typename T>
inline constexpr bool kIsFloating = std::is_floating_point_v<T>;

// Calls f(TypeTag<T>{}) with T the storage type of `type`.
template <typename F>
decltype(auto) visitDType(ir::DType type, F&& f) {
  switch (type) {
    case ir::DType::Double: return f(TypeTag<double>{});
    case ir::DType::Float: return f(TypeTag<float>{});
    case ir::DType::Float16: return f(TypeTag<Half>{});
    case ir::DType::Int64: return f(TypeTag<int64_t>{});
    case ir::DType::Int32: return f(TypeTag<int32_t>{});
    case ir::DType::Int16: return f(TypeTag<int16_t>{});
    case ir::DType::Int8: return f(TypeTag<int8_t>{});
    case ir::DType::UInt64: return f(TypeTag<uint64_t>{});
    case ir::DType::UInt32: return f(TypeTag<uint32_t>{});
    case ir::DType::UInt16: return f(TypeTag<uint16_t>{});
    case ir::DType::UInt8: return f(TypeTag<uint8_t>{});
    case ir::DType::Bool: return f(TypeTag<Bool8>{});
  }
  return f(TypeTag<float>{});
}

// Calls f(TypeTag<In>{}, TypeTag<Out>{}) with the storage types of `in` and `out` (conversions).
template <typename F>
void visitDTypePair(ir::DType in, ir::DType out, F&& f) {
  visitDType(in, [&](auto inTag) { visitDType(out, [&](auto outTag) { f(inTag, outTag); }); });
}

// Calls f(TypeTag<U>{}) with U the unsigned integer of `size` bytes (1, 2, 4 or 8): data
// movement never needs an element's value, only its bytes.
template <typename F>
decltype(auto) visitElementSize(std::size_t size, F&& f) {
  switch (size) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    default: return f(TypeTag<uint64_t>{});
  }
}

// Two's-complement wrapping arithmetic on integer T: no overflow is undefined, also for the
// types narrower than int, which would otherwise multiply as (signed) int.
template <typename T>
using WrappingType = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
template <typename T>
T wrappingAdd(T a, T b) {
  return static_cast<T>(static_cast<WrappingType<T>>(a) + static_cast<WrappingType<T>>(b));
}
template <typename T>
T wrappingSub(T a, T b) {
  return static_cast<T>(static_cast<WrappingType<T>>(a) - static_cast<WrappingType<T>>(b));
}
template <typename T>
T wrappingMul(T a, T b) {
  return static_cast<T>(static_cast<WrappingType<T>>(a) * static_cast<WrappingType<T>>(b));
}

// Value as double (the common currency of conversions; exact for every type but (u)int64 > 2^53).
template <typename T>
inline double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(halfToFloat(v.bits));
  } else if constexpr (std::is_same_v<T, Bool8>) {
    return v.value ? 1.0 : 0.0;
  } else {
    return static_cast<double>(v);
  }
}

template <typename To>
inline To fromDouble(double v) {
  if constexpr (std::is_same_v<To, Half>) {
    const float f = v > FLT_MAX ? INFINITY : (v < -FLT_MAX ? -INFINITY : static_cast<float>(v));
    return Half{floatToHalf(f)};
  } else if constexpr (std::is_same_v<To, Bool8>) {
    return Bool8{static_cast<uint8_t>(v != 0.0 ? 1 : 0)};
  } else if constexpr (std::is_same_v<To, float>) {
    if (std::isnan(v)) return static_cast<float>(v);
    if (v > FLT_MAX) return FLT_MAX;
    if (v < -FLT_MAX) return -FLT_MAX;
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<To, double>) {
    return v;
  } else {
    if (std::isnan(v)) return To{0};
    // (double)max rounds up to 2^bits for 64-bit types, so compare with >=.
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  }
}

// Element conversion between storage types; same-type and integer-to-wider-integer are exact.
template <typename To, typename From>
inline To convertValue(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, Half>) {
    return halfToFloat(v.bits);
  } else if constexpr (std::is_same_v<To, Half> && std::is_same_v<From, float>) {
    return Half{floatToHalf(v)};
  } else if constexpr (std::is_same_v<To, Half> && std::is_integral_v<From>) {
    return Half{floatToHalf(static_cast<float>(v))};
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    if (std::cmp_greater(v, std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (std::cmp_less(v, std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else if constexpr (std::is_same_v<To, float> && std::is_integral_v<From>) {
    return static_cast<float>(v);
  } else {
    return fromDouble<To>(toDouble(v));
  }
}

}  // namespace qaic::kernels
