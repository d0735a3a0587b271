// SPDX-License-Identifier: Apache-2.0
// Damaging a serialized container in place, for the corruption tests: finding its fields (written
// with container/Bytes.hpp's writeLe), repairing the checksum so that the structural checks see the
// damage, and expecting the typed rejection that must follow.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "container/Bytes.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"

namespace qaic::container::testing {

using bytes::readLe;
using bytes::writeLe;

// The section table is written in kind order.
inline std::size_t tableEntry(layout::Section kind) {
  return layout::kHeaderSize + (static_cast<uint32_t>(kind) - 1) * layout::kSectionEntrySize;
}

inline uint64_t sectionOffset(const std::vector<std::byte>& bytes, layout::Section kind) {
  return readLe<uint64_t>(bytes, tableEntry(kind) + 8);
}

inline void fixCrc(std::vector<std::byte>& bytes) {
  const auto* body = reinterpret_cast<const Bytef*>(bytes.data() + layout::kHeaderSize);
  writeLe<uint32_t>(bytes, layout::kOffCrc,
                    static_cast<uint32_t>(crc32_z(0, body, bytes.size() - layout::kHeaderSize)));
}

// Expects every prefix of `bytes` shorter than the whole to be refused as Truncated.
inline void expectEveryTruncationRejected(const std::vector<std::byte>& bytes) {
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    try {
      QpcImage::fromBytes(std::span(bytes.data(), length));
      ADD_FAILURE() << "accepted a file truncated to " << length << " bytes";
    } catch (const QpcFormatError& e) {
      EXPECT_EQ(e.code(), QpcErrorCode::Truncated) << length << ": " << e.what();
    }
  }
}

// Expects a rejection with `code` whose field starts with `field` and whose message names the file.
inline void expectRejected(const std::vector<std::byte>& bytes, QpcErrorCode code, const std::string& field) {
  try {
    QpcImage::fromBytes(bytes, "damaged.bin");
    ADD_FAILURE() << "accepted a container that should fail with " << qpcErrorCodeName(code) << " at " << field;
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.field().rfind(field, 0), 0u) << "field " << e.field() << ", message " << e.what();
    EXPECT_NE(std::string(e.what()).find("damaged.bin: "), std::string::npos) << e.what();
  }
}

// One field overwritten (the checksum repaired after it) and the rejection that must follow.
struct FieldDamage {
  const char* name;
  enum Base { Table, Section } base;  // the field lies in the section's table entry, or in the section
  layout::Section section;
  std::size_t offset;  // from the table entry or the section's start
  std::size_t width;   // bytes written, little-endian
  uint64_t value;
  QpcErrorCode code;
  const char* field;  // the rejection's field starts with this
};

inline void PrintTo(const FieldDamage& damage, std::ostream* os) { *os << damage.name; }

// Applies `damage` to the container `bytes`, then expects its rejection.
inline void expectRejected(std::vector<std::byte> bytes, const FieldDamage& damage) {
  const std::size_t at = (damage.base == FieldDamage::Table ? tableEntry(damage.section)
                                                            : sectionOffset(bytes, damage.section)) +
                         damage.offset;
  std::memcpy(bytes.data() + at, &damage.value, damage.width);
  fixCrc(bytes);
  expectRejected(bytes, damage.code, damage.field);
}

}  // namespace qaic::container::testing
