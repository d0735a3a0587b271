// SPDX-License-Identifier: Apache-2.0
// Little-endian scalars and checked arithmetic for the container format. Reads go through
// memcpy, so unaligned offsets in untrusted files are never dereferenced as wider types.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace qaic::container::bytes {

static_assert(std::endian::native == std::endian::little,
              "the container is read and written with memcpy on a little-endian host");

template <typename T>
T readLe(std::span<const std::byte> data, std::size_t offset) {
  // Callers check bounds first.
  T value;
  std::memcpy(&value, data.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void writeLe(std::vector<std::byte>& out, std::size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

inline std::optional<uint64_t> add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline uint64_t alignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace qaic::container::bytes
