// Every kind of damage to a container is rejected with a typed error naming the field, and
// nothing else (no crash, no other exception); run under ASan+UBSan in `make sanitize`.
#include <gtest/gtest.h>
#include <zlib.h>

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

TEST_F(Corruption, SectionSizeThatWrapsAround) {
  put<uint64_t>(tableEntry(L::Section::Payloads) + 16, ~uint64_t{0} - 4);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "sections[6]");
}

TEST_F(Corruption, SectionInsideTheHeader) {
  put<uint64_t>(tableEntry(L::Section::Strings) + 8, 8);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "sections[0]");
}

TEST_F(Corruption, OverlappingSections) {
  put<uint64_t>(tableEntry(L::Section::Programs) + 8, sectionOffset(L::Section::IoDescriptor));
  fixCrc();
  expectRejected(QpcErrorCode::Overlap, "sections[");
}

TEST_F(Corruption, AbsurdBufferCount) {
  put<uint32_t>(tableEntry(L::Section::IoDescriptor) + 4, 1u << 30);
  fixCrc();
  expectRejected(QpcErrorCode::AbsurdCount, "io_descriptor.count");
}

TEST_F(Corruption, CountLargerThanItsSection) {
  put<uint32_t>(tableEntry(L::Section::Constants) + 4, 3);
  fixCrc();
  expectRejected(QpcErrorCode::AbsurdCount, "constants.size");
}

TEST_F(Corruption, AbsurdStringCount) {
  put<uint32_t>(tableEntry(L::Section::Strings) + 4, 1u << 21);
  fixCrc();
  expectRejected(QpcErrorCode::AbsurdCount, "strings.count");
}

TEST_F(Corruption, BadStringIndex) {
  put<uint32_t>(sectionOffset(L::Section::IoDescriptor) + 4, 9999);
  fixCrc();
  expectRejected(QpcErrorCode::BadString, "buffers[0].name");
}

TEST_F(Corruption, StringLengthPastTheTable) {
  put<uint32_t>(sectionOffset(L::Section::Strings), 4000);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "strings[0]");
}

TEST_F(Corruption, BufferSizeNotMatchingDims) {
  put<uint64_t>(sectionOffset(L::Section::IoDescriptor) + 24, 5);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "buffers[0].size");
}

TEST_F(Corruption, BufferRankBeyondEight) {
  put<uint8_t>(sectionOffset(L::Section::IoDescriptor) + 22, 9);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "buffers[0].rank");
}

TEST_F(Corruption, UnknownDirection) {
  put<uint8_t>(sectionOffset(L::Section::IoDescriptor) + 12, 7);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "buffers[0].direction");
}

TEST_F(Corruption, BufferOutsideTheIoRegion) {
  put<uint64_t>(sectionOffset(L::Section::IoDescriptor) + L::kIoEntrySize + 32, 1u << 30);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "programs[0].buffer 'scores'");
}

TEST_F(Corruption, BuffersOverlappingInTheIoRegion) {
  put<uint64_t>(sectionOffset(L::Section::IoDescriptor) + L::kIoEntrySize + 32, 12288);
  fixCrc();
  expectRejected(QpcErrorCode::Overlap, "programs[0].buffer");
}

TEST_F(Corruption, AllowedShapeExceedingAPartialBuffer) {
  put<int64_t>(sectionOffset(L::Section::AllowedShapes) + 8, 100);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "allowed_shapes[0][0].dims");
}

TEST_F(Corruption, ProgramPayloadOutOfRange) {
  put<uint64_t>(sectionOffset(L::Section::Programs) + 80, 1u << 20);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "programs[0].payload_offset");
}

TEST_F(Corruption, ProgramBufferIndexOutOfRange) {
  put<uint32_t>(sectionOffset(L::Section::BufferIndices), 7);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "programs[0].buffer_indices[0]");
}

TEST_F(Corruption, DoneSemaphoreOutOfRange) {
  put<uint32_t>(sectionOffset(L::Section::Programs) + 28, 4);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "programs[0].done_semaphore");
}

TEST_F(Corruption, ConstantOffsetOutOfRange) {
  put<uint64_t>(sectionOffset(L::Section::Constants) + L::kConstantEntrySize + 16, 1u << 20);
  fixCrc();
  expectRejected(QpcErrorCode::OutOfRange, "constants[1].data_offset");
}

TEST_F(Corruption, ConstantsOverlapping) {
  put<uint64_t>(sectionOffset(L::Section::Constants) + L::kConstantEntrySize + 16, 0);
  fixCrc();
  expectRejected(QpcErrorCode::Overlap, "constants[");
}

TEST_F(Corruption, ConstantOffsetMisaligned) {
  put<uint64_t>(sectionOffset(L::Section::Constants) + L::kConstantEntrySize + 16, 65);
  fixCrc();
  expectRejected(QpcErrorCode::BadValue, "constants[1].data_offset");
}

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
