// SPDX-License-Identifier: Apache-2.0
// Every kind of damage to a container is rejected with a typed error naming the field, and
// nothing else (no crash, no other exception); run under ASan+UBSan in `make sanitize`.
#include <gtest/gtest.h>

#include "QpcDamage.hpp"
#include "QpcTestContents.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::container {
namespace {

namespace L = layout;
using namespace testing;
using enum FieldDamage::Base;

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override { bytes_ = serializeQpc(sample_.contents); }

  SampleContents sample_;
  std::vector<std::byte> bytes_;
};

TEST_F(Corruption, UntouchedSampleLoads) { EXPECT_NO_THROW(QpcImage::fromBytes(bytes_)); }

TEST_F(Corruption, EveryTruncationIsRejected) { expectEveryTruncationRejected(bytes_); }

TEST_F(Corruption, BadMagic) {
  bytes_[0] = std::byte{'X'};
  expectRejected(bytes_, QpcErrorCode::BadMagic, "header.magic");
}

TEST_F(Corruption, BadVersion) {
  writeLe<uint32_t>(bytes_, L::kOffVersion, kFormatVersion + 1);
  expectRejected(bytes_, QpcErrorCode::BadVersion, "header.version");
}

TEST_F(Corruption, BadCrc) {
  bytes_[bytes_.size() - 1] ^= std::byte{0x01};
  expectRejected(bytes_, QpcErrorCode::BadCrc, "header.crc32");
}

TEST_F(Corruption, TrailingBytes) {
  bytes_.push_back(std::byte{0});
  expectRejected(bytes_, QpcErrorCode::BadHeader, "header.file_size");
}

TEST_F(Corruption, SectionOffsetPastTheFile) {
  writeLe<uint64_t>(bytes_, tableEntry(L::Section::Payloads) + 8, (bytes_.size() + 64) / 64 * 64);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::OutOfRange, "sections[6]");
}

TEST_F(Corruption, OverlappingSections) {
  writeLe<uint64_t>(bytes_, tableEntry(L::Section::Programs) + 8, sectionOffset(bytes_, L::Section::IoDescriptor));
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::Overlap, "sections[");
}

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

TEST_P(FieldDamageTest, IsRejectedNamingTheField) { expectRejected(bytes_, GetParam()); }

INSTANTIATE_TEST_SUITE_P(Corruption, FieldDamageTest, ::testing::ValuesIn(kFieldDamage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(Corruption, DuplicateConstantName) {
  const auto first = readLe<uint32_t>(bytes_, sectionOffset(bytes_, L::Section::Constants));
  writeLe<uint32_t>(bytes_, sectionOffset(bytes_, L::Section::Constants) + L::kConstantEntrySize, first);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadString, "constants[1].name");
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
      if (at >= L::kHeaderSize) fixCrc(bytes_);
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
