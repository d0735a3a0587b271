// SPDX-License-Identifier: Apache-2.0
// Header, section table and string table of an untrusted programqpc.bin: nothing is used
// before it has been checked against the bytes that hold it.
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "container/QpcParser.hpp"

namespace qaic::container::detail {

using bytes::readLe;

const char* sectionName(uint32_t kind) {
  switch (static_cast<L::Section>(kind)) {
    case L::Section::Strings: return "strings";
    case L::Section::IoDescriptor: return "io_descriptor";
    case L::Section::AllowedShapes: return "allowed_shapes";
    case L::Section::Programs: return "programs";
    case L::Section::BufferIndices: return "buffer_indices";
    case L::Section::Constants: return "constants";
    case L::Section::Payloads: return "payloads";
    case L::Section::ConstantData: return "constant_data";
    case L::Section::RetainedState: return "retained_state";
    case L::Section::SpecializationPayloads: return "specialization_payloads";
    case L::Section::DeviceParts: return "device_parts";
  }
  return "unknown";
}

void Parser::readHeader(bool verifyChecksum, std::optional<uint32_t> knownBodyCrc) {
  if (file_.size() < L::kHeaderSize) {
    fail(QpcErrorCode::Truncated, "header",
         "file has " + std::to_string(file_.size()) + " bytes, the header needs " + std::to_string(L::kHeaderSize));
  }
  if (std::memcmp(file_.data() + L::kOffMagic, L::kMagic.data(), L::kMagic.size()) != 0) {
    fail(QpcErrorCode::BadMagic, "header.magic", "not a program container (bad magic)");
  }
  const auto version = readLe<uint32_t>(file_, L::kOffVersion);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    fail(QpcErrorCode::BadVersion, "header.version",
         "format version " + std::to_string(version) + " is not supported (expected " +
             std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) + ")");
  }
  if (version > newestVersion_) {
    fail(QpcErrorCode::BadVersion, "header.version",
         "format version " + std::to_string(version) + ": a device part is a single-device container (version 1 to " +
             std::to_string(newestVersion_) + ") and cannot have device parts of its own");
  }
  out_.formatVersion = version;
  sectionKinds_ = L::sectionKindsOf(version);
  const auto headerSize = readLe<uint32_t>(file_, L::kOffHeaderSize);
  if (headerSize != L::kHeaderSize) {
    fail(QpcErrorCode::BadHeader, "header.header_size",
         std::to_string(headerSize) + " is not " + std::to_string(L::kHeaderSize));
  }
  if (readLe<uint32_t>(file_, L::kOffFlags) != 0) {
    fail(QpcErrorCode::BadHeader, "header.flags", "unknown flags set");
  }
  if (readLe<uint32_t>(file_, L::kOffReserved) != 0) {
    fail(QpcErrorCode::BadHeader, "header.reserved", "must be zero");
  }
  const auto fileSize = readLe<uint64_t>(file_, L::kOffFileSize);
  if (fileSize > file_.size()) {
    fail(QpcErrorCode::Truncated, "header.file_size",
         "declares " + std::to_string(fileSize) + " bytes but only " + std::to_string(file_.size()) +
             " are present (truncated file)");
  }
  if (fileSize < file_.size()) {
    fail(QpcErrorCode::BadHeader, "header.file_size",
         "declares " + std::to_string(fileSize) + " bytes but the file has " + std::to_string(file_.size()) +
             " (trailing bytes)");
  }
  const auto sectionCount = readLe<uint32_t>(file_, L::kOffSectionCount);
  if (sectionCount != sectionKinds_) {
    fail(sectionCount > sectionKinds_ ? QpcErrorCode::AbsurdCount : QpcErrorCode::BadValue, "header.section_count",
         std::to_string(sectionCount) + " sections, version " + std::to_string(version) + " has " +
             std::to_string(sectionKinds_));
  }
  const auto tableOffset = readLe<uint64_t>(file_, L::kOffSectionTable);
  if (tableOffset != L::kHeaderSize) {
    fail(QpcErrorCode::BadHeader, "header.section_table_offset",
         std::to_string(tableOffset) + " is not " + std::to_string(L::kHeaderSize));
  }
  tableEnd_ = L::kHeaderSize + sectionKinds_ * L::kSectionEntrySize;
  if (tableEnd_ > file_.size()) {
    fail(QpcErrorCode::Truncated, "section_table", "extends past the end of the file");
  }
  if (verifyChecksum) {
    const auto expected = readLe<uint32_t>(file_, L::kOffCrc);
    const auto* body = reinterpret_cast<const Bytef*>(file_.data() + L::kHeaderSize);
    const auto actual = knownBodyCrc ? *knownBodyCrc
                                     : static_cast<uint32_t>(
                                           crc32_z(crc32_z(0, nullptr, 0), body, file_.size() - L::kHeaderSize));
    if (actual != expected) {
      fail(QpcErrorCode::BadCrc, "header.crc32", "checksum mismatch (file is corrupt)");
    }
  }
}

void Parser::readSectionTable() {
  struct Span {
    uint64_t begin, end;
    std::string field;
  };
  std::vector<Span> spans;
  for (uint32_t i = 0; i < sectionKinds_; ++i) {
    const std::size_t at = L::kHeaderSize + i * L::kSectionEntrySize;
    const std::string field = "sections[" + std::to_string(i) + "]";
    const auto kind = readLe<uint32_t>(file_, at);
    SectionRef ref;
    ref.count = readLe<uint32_t>(file_, at + 4);
    ref.offset = readLe<uint64_t>(file_, at + 8);
    ref.size = readLe<uint64_t>(file_, at + 16);
    ref.present = true;
    if (kind < 1 || kind > sectionKinds_) {
      fail(QpcErrorCode::BadValue, field + ".kind", "unknown section kind " + std::to_string(kind));
    }
    const std::string named = field + "(" + sectionName(kind) + ")";
    if (sections_[kind].present) fail(QpcErrorCode::BadValue, named + ".kind", "appears twice");
    const uint64_t alignment = L::isAlignedLikeConstants(static_cast<L::Section>(kind)) ? kConstantAlignment
                                                                                        : L::kSectionAlignment;
    if (ref.offset % alignment != 0) {
      fail(QpcErrorCode::BadValue, named + ".offset",
           std::to_string(ref.offset) + " is not " + std::to_string(alignment) + "-byte aligned");
    }
    const uint64_t end = checkedAdd(ref.offset, ref.size, named + ".size");
    if (ref.offset < tableEnd_ || end > file_.size()) {
      fail(QpcErrorCode::OutOfRange, named + ".offset",
           "[" + std::to_string(ref.offset) + ", " + std::to_string(end) + ") lies outside the section area [" +
               std::to_string(tableEnd_) + ", " + std::to_string(file_.size()) + ")");
    }
    sections_[kind] = ref;
    if (ref.size > 0) spans.push_back({ref.offset, end, named});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      fail(QpcErrorCode::Overlap, spans[i].field, "overlaps " + spans[i - 1].field);
    }
  }
  checkEntries(L::Section::IoDescriptor, L::kIoEntrySize, kMaxBuffers);
  checkEntries(L::Section::Programs, L::kProgramEntrySize, kMaxPrograms);
  checkEntries(L::Section::Constants, L::kConstantEntrySize, kMaxConstants);
  checkEntries(L::Section::BufferIndices, L::kBufferIndexSize, kMaxBuffers * kMaxPrograms);
  checkEntries(L::Section::RetainedState, L::kRetainedEntrySize, kMaxBuffers);
  checkEntries(L::Section::SpecializationPayloads, L::kSpecializationEntrySize, kMaxShapeCombinations * kMaxPrograms);
  const auto shapeCount = count(L::Section::AllowedShapes);
  if (shapeCount > kMaxShapeCombinations) {
    fail(QpcErrorCode::AbsurdCount, "allowed_shapes.count",
         std::to_string(shapeCount) + " exceeds the limit " + std::to_string(kMaxShapeCombinations));
  }
  const uint64_t perCombination = checkedMul(count(L::Section::IoDescriptor), L::kShapeEntrySize,
                                             "allowed_shapes.size");
  expectSize(L::Section::AllowedShapes, checkedMul(shapeCount, perCombination, "allowed_shapes.size"));
  for (auto kind : {L::Section::Payloads, L::Section::ConstantData}) {
    if (count(kind) != 0) {
      fail(QpcErrorCode::BadValue, std::string(sectionName(static_cast<uint32_t>(kind))) + ".count",
           "must be 0 for a byte section");
    }
  }
  if (count(L::Section::Strings) > kMaxStrings ||
      count(L::Section::Strings) > sections_[static_cast<uint32_t>(L::Section::Strings)].size / 4) {
    fail(QpcErrorCode::AbsurdCount, "strings.count",
         std::to_string(count(L::Section::Strings)) + " strings cannot fit in " +
             std::to_string(sections_[static_cast<uint32_t>(L::Section::Strings)].size) + " bytes");
  }
}

void Parser::checkEntries(L::Section kind, std::size_t entrySize, std::size_t limit) {
  const std::string name = sectionName(static_cast<uint32_t>(kind));
  if (count(kind) > limit) {
    fail(QpcErrorCode::AbsurdCount, name + ".count",
         std::to_string(count(kind)) + " exceeds the limit " + std::to_string(limit));
  }
  expectSize(kind, checkedMul(count(kind), entrySize, name + ".size"));
}

void Parser::expectSize(L::Section kind, uint64_t expected) {
  const auto& s = sections_[static_cast<uint32_t>(kind)];
  if (s.size != expected) {
    const std::string name = sectionName(static_cast<uint32_t>(kind));
    fail(s.size < expected ? QpcErrorCode::AbsurdCount : QpcErrorCode::BadValue, name + ".size",
         std::to_string(s.count) + " entries need " + std::to_string(expected) + " bytes but the section has " +
             std::to_string(s.size));
  }
}

void Parser::readStrings() {
  const auto data = section(L::Section::Strings);
  const uint32_t n = count(L::Section::Strings);
  strings_.reserve(n);
  uint64_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "strings[" + std::to_string(i) + "]";
    if (data.size() - at < 4) fail(QpcErrorCode::OutOfRange, field, "length runs past the string table");
    const auto length = readLe<uint32_t>(data, at);
    at += 4;
    if (length > kMaxStringLength) {
      fail(QpcErrorCode::BadString, field,
           "length " + std::to_string(length) + " exceeds " + std::to_string(kMaxStringLength));
    }
    if (data.size() - at < length) fail(QpcErrorCode::OutOfRange, field, "runs past the string table");
    std::string_view text(reinterpret_cast<const char*>(data.data() + at), length);
    if (text.find('\0') != std::string_view::npos) {
      fail(QpcErrorCode::BadString, field, "contains a NUL byte");
    }
    strings_.push_back(text);
    at += length;
  }
  if (at != data.size()) fail(QpcErrorCode::BadValue, "strings.size", "has trailing bytes");
}

}  // namespace qaic::container::detail
