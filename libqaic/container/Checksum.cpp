// SPDX-License-Identifier: Apache-2.0
#include "container/Checksum.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace qaic::container {

namespace {

// crc32 of 2^k zero bytes, for k = 0..63: a run of any length is a combination of these.
const std::array<uint32_t, 64>& zeroRunCrcs() {
  static const std::array<uint32_t, 64> table = [] {
    std::array<uint32_t, 64> t{};
    const Bytef zero = 0;
    t[0] = static_cast<uint32_t>(crc32_z(0, &zero, 1));
    for (std::size_t k = 1; k < t.size(); ++k) {
      const auto half = static_cast<z_off64_t>(uint64_t{1} << (k - 1));
      t[k] = static_cast<uint32_t>(crc32_combine64(t[k - 1], t[k - 1], half));
    }
    return t;
  }();
  return table;
}

}  // namespace

void RunningCrc::append(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;  // zlib answers a null buffer with the initial value, 0
  crc_ = static_cast<uint32_t>(crc32_z(crc_, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

void RunningCrc::appendZeros(uint64_t count) {
  const auto& runs = zeroRunCrcs();
  for (std::size_t k = 0; k < runs.size() && count != 0; ++k) {
    const uint64_t run = uint64_t{1} << k;
    if ((count & run) == 0) continue;
    crc_ = static_cast<uint32_t>(crc32_combine64(crc_, runs[k], static_cast<z_off64_t>(run)));
    count &= ~run;
  }
}

uint32_t crcOfFileFrom(int fd, std::span<const std::byte> mapped, uint64_t from) {
  RunningCrc crc;
  const uint64_t end = mapped.size();
  uint64_t at = std::min(from, end);
  while (at < end) {
    off_t data = ::lseek(fd, static_cast<off_t>(at), SEEK_DATA);
    // ENXIO: no data after `at` (the rest is a hole); any other failure: read it all as data.
    if (data < 0) data = errno == ENXIO ? static_cast<off_t>(end) : static_cast<off_t>(at);
    const uint64_t dataAt = std::min<uint64_t>(static_cast<uint64_t>(data), end);
    crc.appendZeros(dataAt - at);
    if (dataAt >= end) break;
    off_t hole = ::lseek(fd, static_cast<off_t>(dataAt), SEEK_HOLE);
    const uint64_t holeAt = hole < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    crc.append(mapped.subspan(dataAt, holeAt - dataAt));
    at = holeAt;
  }
  return crc.value();
}

}  // namespace qaic::container
