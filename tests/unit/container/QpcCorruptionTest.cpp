// Every kind of damage to a container is rejected with a typed error naming the field, and
// nothing else (no crash, no other exception); run under ASan+UBSan in `make sanitize`.
#include <gtest/gtest.h>
#include <zlib.h>

#include <bit>
#include <cstring>

#include "QpcTestContents.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::container {
namespace {

namespace L = layout;

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override { bytes_ = serializeQpc(sample_.contents); }

  template <typename T>
  T get(std::size_t at) const {
    T v;
    std::memcpy(&v, bytes_.data() + at, sizeof v);
    return v;
  }
  template <typename T>
  void put(std::size_t at, T value) {
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  // The section table is written in kind order.
  std::size_t tableEntry(L::Section kind) const {
    return L::kHeaderSize + (static_cast<uint32_t>(kind) - 1) * L::kSectionEntrySize;
  }
  uint64_t sectionOffset(L::Section kind) const { return get<uint64_t>(tableEntry(kind) + 8); }
  void fixCrc() {
    const auto* body = reinterpret_cast<const Bytef*>(bytes_.data() + L::kHeaderSize);
    put<uint32_t>(L::kOffCrc, static_cast<uint32_t>(crc32_z(0, body, bytes_.size() - L::kHeaderSize)));
  }
  // Expects a rejection with `code` whose field starts with `field`.
  void expectRejected(QpcErrorCode code, const std::string& field) {
    try {
      QpcImage::fromBytes(bytes_, "sample.bin");
      ADD_FAILURE() << "accepted a container that should fail with " << qpcErrorCodeName(code);
    } catch (const QpcFormatError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.field().rfind(field, 0), 0u) << "field " << e.field() << ", message " << e.what();
      EXPECT_NE(std::string(e.what()).find("sample.bin: "), std::string::npos) << e.what();
    }
  }

  testing::SampleContents sample_;
  std::vector<std::byte> bytes_;
};

TEST_F(Corruption, UntouchedSampleLoads) { EXPECT_NO_THROW(QpcImage::fromBytes(bytes_)); }

TEST_F(Corruption, EveryTruncationIsRejected) {
  for (std::size_t length = 0; length < bytes_.size(); ++length) {
    try {
      QpcImage::fromBytes(std::span(bytes_.data(), length));
      ADD_FAILURE() << "accepted a file truncated to " << length << " bytes";
    } catch (const QpcFormatError& e) {
      EXPECT_EQ(e.code(), QpcErrorCode::Truncated) << length << ": " << e.what();
    }
  }
}

TEST_F(Corruption, BadMagic) {
  bytes_[0] = std::byte{'X'};
  expectRejected(QpcErrorCode::BadMagic, "header.magic");
}

TEST_F(Corruption, BadVersion) {
  put<uint32_t>(L::kOffVersion, 3);
  expectRejected(QpcErrorCode::BadVersion, "header.version");
}

TEST_F(Corruption, BadCrc) {
  bytes_[bytes_.size() - 1] ^= std::byte{0x01};
  expectRejected(QpcErrorCode::BadCrc, "header.crc32");
}

TEST_F(Corruption, TrailingBytes) {
  bytes_.push_back(std::byte{0});
  expectRejected(QpcErrorCode::BadHeader, "header.file_size");
}

TEST_F(Corruption, SectionOffsetPastTheFile) {
  put<uint64_t>(tableEntry(L::Section::Payloads) + 8, (bytes_.size() + 64) / 64 * 64);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "sections[6]");
}

TEST_F(Corruption, OverlappingSections) {
  put<uint64_t>(tableEntry(L::Section::Programs) + 8, sectionOffset(L::Section::IoDescriptor));
  fixCrc();
  expectRejected(QpcErrorCode::Overlap, "sections[");
}

// One field overwritten (the checksum repaired after it) and the rejection that must follow.
struct FieldDamage {
  const char* name;
  enum Base { Table, Section } base;  // the field lies in the section's table entry, or in the section
  L::Section section;
  std::size_t offset;  // from the table entry or the section's start
  std::size_t width;   // bytes written, little-endian
  uint64_t value;
  QpcErrorCode code;
  const char* field;  // the rejection's field starts with this
};
using enum FieldDamage::Base;
void PrintTo(const FieldDamage& damage, std::ostream* os) { *os << damage.name; }

const FieldDamage kFieldDamage[] = {
    {"SectionSizeThatWrapsAround", Table, L::Section::Payloads, 16, sizeof(uint64_t), ~uint64_t{0} - 4,
     QpcErrorCode::OutOfRange, "sections[6]"},
    {"SectionInsideTheHeader", Table, L::Section::Strings, 8, sizeof(uint64_t), 8, QpcErrorCode::OutOfRange,
     "sections[0]"},
    {"AbsurdBufferCount", Table, L::Section::IoDescriptor, 4, sizeof(uint32_t), 1u << 30, QpcErrorCode::AbsurdCount,
     "io_descriptor.count"},
    {"CountLargerThanItsSection", Table, L::Section::Constants, 4, sizeof(uint32_t), 3, QpcErrorCode::AbsurdCount,
     "constants.size"},
    {"AbsurdStringCount", Table, L::Section::Strings, 4, sizeof(uint32_t), 1u << 21, QpcErrorCode::AbsurdCount,
     "strings.count"},
    {"BadStringIndex", Section, L::Section::IoDescriptor, 4, sizeof(uint32_t), 9999, QpcErrorCode::BadString,
     "buffers[0].name"},
    {"StringLengthPastTheTable", Section, L::Section::Strings, 0, sizeof(uint32_t), 4000, QpcErrorCode::OutOfRange,
     "strings[0]"},
    {"BufferSizeNotMatchingDims", Section, L::Section::IoDescriptor, 24, sizeof(uint64_t), 5, QpcErrorCode::BadValue,
     "buffers[0].size"},
    {"BufferRankBeyondEight", Section, L::Section::IoDescriptor, 22, sizeof(uint8_t), 9, QpcErrorCode::BadValue,
     "buffers[0].rank"},
    {"UnknownDirection", Section, L::Section::IoDescriptor, 12, sizeof(uint8_t), 7, QpcErrorCode::BadValue,
     "buffers[0].direction"},
    {"BufferOutsideTheIoRegion", Section, L::Section::IoDescriptor, L::kIoEntrySize + 32, sizeof(uint64_t), 1u << 30,
     QpcErrorCode::OutOfRange, "programs[0].buffer 'scores'"},
    {"BuffersOverlappingInTheIoRegion", Section, L::Section::IoDescriptor, L::kIoEntrySize + 32, sizeof(uint64_t),
     12288, QpcErrorCode::Overlap, "programs[0].buffer"},
    {"AllowedShapeExceedingAPartialBuffer", Section, L::Section::AllowedShapes, 8, sizeof(int64_t), 100,
     QpcErrorCode::BadValue, "allowed_shapes[0][0].dims"},
    {"ProgramPayloadOutOfRange", Section, L::Section::Programs, 80, sizeof(uint64_t), 1u << 20,
     QpcErrorCode::OutOfRange, "programs[0].payload_offset"},
    {"ProgramBufferIndexOutOfRange", Section, L::Section::BufferIndices, 0, sizeof(uint32_t), 7, QpcErrorCode::BadValue,
     "programs[0].buffer_indices[0]"},
    {"DoneSemaphoreOutOfRange", Section, L::Section::Programs, 28, sizeof(uint32_t), 4, QpcErrorCode::BadValue,
     "programs[0].done_semaphore"},
    {"ConstantOffsetOutOfRange", Section, L::Section::Constants, L::kConstantEntrySize + 16, sizeof(uint64_t), 1u << 20,
     QpcErrorCode::OutOfRange, "constants[1].data_offset"},
    {"ConstantsOverlapping", Section, L::Section::Constants, L::kConstantEntrySize + 16, sizeof(uint64_t), 0,
     QpcErrorCode::Overlap, "constants["},
    {"ConstantOffsetMisaligned", Section, L::Section::Constants, L::kConstantEntrySize + 16, sizeof(uint64_t), 65,
     QpcErrorCode::BadValue, "constants[1].data_offset"},
};

class FieldDamageTest : public Corruption, public ::testing::WithParamInterface<FieldDamage> {};

TEST_P(FieldDamageTest, IsRejectedNamingTheField) {
  const FieldDamage& damage = GetParam();
  const std::size_t at = (damage.base == Table ? tableEntry(damage.section) : sectionOffset(damage.section)) +
                         damage.offset;
  static_assert(std::endian::native == std::endian::little, "the container is little-endian");
  std::memcpy(bytes_.data() + at, &damage.value, damage.width);
  fixCrc();
  expectRejected(damage.code, damage.field);
}

INSTANTIATE_TEST_SUITE_P(Corruption, FieldDamageTest, ::testing::ValuesIn(kFieldDamage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(Corruption, DuplicateConstantName) {
  const auto first = get<uint32_t>(sectionOffset(L::Section::Constants));
  put<uint32_t>(sectionOffset(L::Section::Constants) + L::kConstantEntrySize, first);
  fixCrc();
  expectRejected(QpcErrorCode::BadString, "constants[1].name");
}

// Every single-byte change (with the checksum repaired, so the structural checks see it) is
// either a valid container or a QpcFormatError; nothing else may escape.
TEST_F(Corruption, EverySingleByteFlipIsHandled) {
  const auto original = bytes_;
  std::size_t rejected = 0;
  std::size_t accepted = 0;
  for (std::size_t at = 0; at < original.size(); ++at) {
    for (std::byte mask : {std::byte{0x01}, std::byte{0x80}, std::byte{0xFF}}) {
      bytes_ = original;
      bytes_[at] ^= mask;
      if (at >= L::kHeaderSize) fixCrc();
      try {
        QpcImage::fromBytes(bytes_);
        ++accepted;
      } catch (const QpcFormatError&) {
        ++rejected;
      }
    }
  }
  // Header, table and descriptor damage is caught; constant and payload bytes are opaque data.
  EXPECT_GT(rejected, L::kHeaderSize * 3);
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace qaic::container
