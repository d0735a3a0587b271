// SPDX-License-Identifier: Apache-2.0
// Internal: the on-disk layout of the weights side file (docs/formats/ir.md, "Weights file").
// Little-endian; read and written with memcpy so no unaligned or aliased access happens.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace qaic::ir::weights_format {

static_assert(std::endian::native == std::endian::little, "the weights file is little-endian");

inline constexpr char kMagic[8] = {'Q', 'A', 'I', 'C', 'W', 'T', 'S', '\0'};
inline constexpr uint32_t kVersion = 1;
inline constexpr std::size_t kAlignment = 64;  // every data block starts at a multiple of this
inline constexpr std::size_t kMaxDims = 8;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t count;     // number of entries
  uint64_t fileSize;  // total file length in bytes
  uint64_t reserved;  // 0
};

struct Entry {
  uint64_t nameOffset;     // from the start of the file
  uint32_t nameLength;     // bytes, no terminator
  uint8_t dtype;           // DType code (docs/formats/ir.md)
  uint8_t rank;            // 0..8
  uint16_t reserved;       // 0
  int64_t dims[kMaxDims];  // unused trailing dims are 0
  uint64_t dataOffset;     // multiple of kAlignment
  uint64_t dataSize;       // elementCount(dims) * dtypeSize(dtype)
};

static_assert(sizeof(Header) == 32);
static_assert(sizeof(Entry) == 96);

}  // namespace qaic::ir::weights_format
