// SPDX-License-Identifier: Apache-2.0
// The container's CRC32 (zlib's) computed incrementally, in file order, with runs of zero bytes
// folded in arithmetically: a sparse file's holes are never read or written to be checksummed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace qaic::container {

// The header's CRC covers the file from here (after the 48-byte header) to its end.
inline constexpr uint64_t kChecksummedFrom = 48;

class RunningCrc {
 public:
  void append(std::span<const std::byte> bytes);
  void appendZeros(uint64_t count);  // O(log count), touches no memory
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

// The CRC of bytes [from, end of file) of an open regular file, reading only its data extents
// (SEEK_DATA / SEEK_HOLE) from `mapped`, the whole file mapped. Holes count as zeros.
uint32_t crcOfFileFrom(int fd, std::span<const std::byte> mapped, uint64_t from);

}  // namespace qaic::container
