// SPDX-License-Identifier: Apache-2.0
// The validating parser behind QpcImage, split by concern: QpcParseSections.cpp checks the
// header, the section table and the string table; QpcParseEntries.cpp the entries that use them.
// Private to the container.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "container/Bytes.hpp"
#include "container/QpcFormatError.hpp"
#include "container/QpcLayout.hpp"
#include "container/QpcModel.hpp"

namespace qaic::container::detail {

namespace L = layout;

struct SectionRef {
  uint32_t count = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  bool present = false;
};

const char* sectionName(uint32_t kind);

class Parser {
 public:
  // `newestVersion`: the newest format version accepted; a device part's nested image is read
  // with kSingleDeviceFormatVersion, so a part cannot have parts of its own.
  Parser(std::span<const std::byte> file, const std::string& source, QpcContents& out,
         uint32_t newestVersion = kFormatVersion)
      : file_(file), source_(source), out_(out), newestVersion_(newestVersion) {}

  // Fills `out` and returns the IO descriptor's bytes. Throws QpcFormatError.
  // `knownBodyCrc`: the body's CRC computed by the caller (QpcImage::open, hole-aware).
  std::span<const std::byte> run(bool verifyChecksum, std::optional<uint32_t> knownBodyCrc = std::nullopt) {
    verifyChecksum_ = verifyChecksum;
    readHeader(verifyChecksum, knownBodyCrc);
    readSectionTable();
    readStrings();
    readBuffers();
    readAllowedShapes();
    readPrograms();
    readConstants();
    readRetainedState();
    readSpecializationPayloads();
    readDeviceParts();
    return section(L::Section::IoDescriptor);
  }

 private:
  [[noreturn]] void fail(QpcErrorCode code, const std::string& field, const std::string& what) const {
    throw QpcFormatError(code, field, source_ + ": " + field + ": " + what);
  }

  uint64_t checkedAdd(uint64_t a, uint64_t b, const std::string& field) const {
    auto r = bytes::add(a, b);
    if (!r) fail(QpcErrorCode::OutOfRange, field, "offset + size overflows");
    return *r;
  }

  uint64_t checkedMul(uint64_t a, uint64_t b, const std::string& field) const {
    auto r = bytes::mul(a, b);
    if (!r) fail(QpcErrorCode::AbsurdCount, field, "size computation overflows");
    return *r;
  }

  std::span<const std::byte> section(L::Section kind) const {
    const auto& s = sections_[static_cast<uint32_t>(kind)];
    return file_.subspan(s.offset, s.size);
  }

  uint32_t count(L::Section kind) const { return sections_[static_cast<uint32_t>(kind)].count; }

  std::string string(uint32_t index, const std::string& field) const {
    if (index >= strings_.size()) {
      fail(QpcErrorCode::BadString, field,
           "string index " + std::to_string(index) + " is outside the string table (" +
               std::to_string(strings_.size()) + " strings)");
    }
    if (strings_[index].empty()) fail(QpcErrorCode::BadString, field, "is empty");
    return std::string(strings_[index]);
  }

  template <typename E>
  E enumValue(uint8_t raw, uint8_t last, const std::string& field) const {
    if (raw > last) fail(QpcErrorCode::BadValue, field, "value " + std::to_string(raw) + " is not defined");
    return static_cast<E>(raw);
  }

  void readHeader(bool verifyChecksum, std::optional<uint32_t> knownBodyCrc);
  void readSectionTable();
  void checkEntries(L::Section kind, std::size_t entrySize, std::size_t limit);
  void expectSize(L::Section kind, uint64_t expected);
  void readStrings();
  // Reads rank and dims; returns the element count (overflow-checked).
  uint64_t readDims(std::span<const std::byte> entry, std::size_t dimsAt, uint8_t rank, const std::string& field,
                    ir::Dims& dims, int64_t minDim = 1) const;
  void readBuffers();
  void readAllowedShapes();
  void readPrograms();
  void checkIoRegion(const QpcProgram& p, const std::string& field) const;
  void readConstants();
  void readRetainedState();
  void readSpecializationPayloads();
  void readDeviceParts();
  void readNestedImage(QpcDevicePart& part, const std::string& field) const;

  std::span<const std::byte> file_;
  const std::string& source_;
  QpcContents& out_;
  uint32_t newestVersion_;
  bool verifyChecksum_ = true;
  uint64_t tableEnd_ = 0;
  uint32_t sectionKinds_ = L::kSectionKinds;  // the header's version's
  std::array<SectionRef, L::kSectionKinds + 1> sections_{};
  std::vector<std::string_view> strings_;
};

}  // namespace qaic::container::detail
