// SPDX-License-Identifier: Apache-2.0
// device_parts (format version 4): a program that spans several devices keeps part 0 as the
// container itself and nests every other part's single-device container. Round trip, the
// writer's refusals, every damage to the section or to a nested image named by its field, and
// the resources of each part.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <stdexcept>

#include "QpcDamage.hpp"
#include "QpcTestContents.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "container/QpcWriter.hpp"
#include "container/ResourceNeeds.hpp"

namespace qaic::container {
namespace {

namespace L = layout;
using namespace testing;
using enum FieldDamage::Base;

constexpr char kConfig[] =
    R"({"connections":[{"devices":[2,0,5],"type":"p2p"}],"partitions":[{"name":"Partition0","devices":[)"
    R"({"deviceId":2,"numCores":3},{"deviceId":0,"numCores":3},{"deviceId":5,"numCores":3}]}]})";

// A program over the devices 2, 0 and 5: part 0 is the sample itself, part 1 a version-1
// sample, part 2 a version-2 one (retained state) on 2 NSPs.
class DeviceParts : public ::testing::Test {
 protected:
  DeviceParts() {
    second_.contents.retainedState = {retainedPair("past", 4096)};
    second_.contents.programs[0].numCores = 2;
    images_ = {serializeQpc(first_.contents), serializeQpc(second_.contents)};
    QpcContents& c = outer_.contents;
    c.partitionConfig = kConfig;
    c.deviceParts = {part(2, 3, {}), part(0, 3, images_[0]), part(5, 2, images_[1])};
    c.deviceParts[2].retainedBytes = 4096;
  }
  static QpcDevicePart part(uint32_t slot, uint32_t cores, std::span<const std::byte> image) {
    QpcDevicePart p;
    p.slot = slot;
    p.numCores = cores;
    p.weightBytes = 1000 + slot;
    p.sentBytes = 300 + slot;
    p.receivedBytes = 700 + slot;
    p.image = image;
    return p;
  }
  void expectWriterRefuses(QpcErrorCode code, const std::string& field) {
    try {
      serializeQpc(outer_.contents);
      ADD_FAILURE() << "wrote a container that should fail at " << field;
    } catch (const QpcFormatError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.field().rfind(field, 0), 0u) << "field " << e.field() << ", message " << e.what();
    }
  }
  // The offset of part `i`'s nested image in the file.
  static uint64_t imageAt(const std::vector<std::byte>& bytes, std::size_t i) {
    const uint64_t section = sectionOffset(bytes, L::Section::DeviceParts);
    return section + readLe<uint64_t>(bytes, section + L::kPartsHeaderSize + i * L::kPartEntrySize + 40);
  }

  SampleContents outer_, first_, second_;
  std::vector<std::vector<std::byte>> images_;
};

TEST_F(DeviceParts, RoundTripKeepsEveryPartAndItsNestedContainer) {
  const auto bytes = serializeQpc(outer_.contents);
  const auto image = QpcImage::fromBytes(bytes, "parts.bin");
  EXPECT_EQ(image->contents().formatVersion, 4u);
  EXPECT_EQ(readLe<uint32_t>(bytes, L::kOffSectionCount), 11u);
  EXPECT_EQ(image->deviceCount(), 3u);
  EXPECT_EQ(image->contents().partitionConfig, kConfig);
  EXPECT_EQ(image->contents().connection, DeviceConnection::P2p);
  // Part 0 is the outer container: its IO descriptor is the network's.
  ASSERT_EQ(image->buffers().size(), 2u);
  EXPECT_EQ(image->buffers()[0].io.bufferName, "image");
  const auto& parts = image->deviceParts();
  ASSERT_EQ(parts.size(), 3u);
  const uint32_t slots[] = {2, 0, 5}, cores[] = {3, 3, 2};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(parts[i].slot, slots[i]);
    EXPECT_EQ(parts[i].numCores, cores[i]);
    EXPECT_EQ(parts[i].weightBytes, 1000 + slots[i]);
    EXPECT_EQ(parts[i].sentBytes, 300 + slots[i]);
    EXPECT_EQ(parts[i].receivedBytes, 700 + slots[i]);
    EXPECT_EQ(parts[i].retainedBytes, i == 2 ? 4096u : 0u);
  }
  EXPECT_TRUE(parts[0].image.empty());
  EXPECT_EQ(parts[0].contents, nullptr);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    SCOPED_TRACE(i);
    // A span into the file, 64-byte aligned there like constant data, holding the bytes given.
    EXPECT_GE(parts[i].image.data(), bytes.data());
    EXPECT_LE(parts[i].image.data() + parts[i].image.size(), bytes.data() + bytes.size());
    EXPECT_EQ((parts[i].image.data() - bytes.data()) % 64, 0);
    EXPECT_TRUE(std::equal(parts[i].image.begin(), parts[i].image.end(), images_[i - 1].begin(), images_[i - 1].end()));
    ASSERT_NE(parts[i].contents, nullptr);
  }
  EXPECT_EQ(parts[1].contents->formatVersion, 1u);
  EXPECT_EQ(parts[2].contents->formatVersion, 2u);
  EXPECT_EQ(parts[2].contents->programs[0].numCores, 2u);
  ASSERT_EQ(parts[2].contents->retainedState.size(), 1u);
  // The nested constants are spans into the nested image (so into the file), 64-byte aligned.
  for (const auto& constant : parts[1].contents->constants) {
    EXPECT_GE(constant.tensor.data.data(), parts[1].image.data());
    EXPECT_LE(constant.tensor.data.data() + constant.tensor.data.size(), parts[1].image.data() + parts[1].image.size());
    EXPECT_EQ((constant.tensor.data.data() - bytes.data()) % 64, 0);
  }
  // Written again from what was read, the file is the same.
  EXPECT_EQ(serializeQpc(image->contents()), bytes);
}

TEST_F(DeviceParts, VersionFourOnlyWithParts) {
  outer_.contents.deviceParts.clear();
  outer_.contents.partitionConfig.clear();
  const auto single = serializeQpc(outer_.contents);
  EXPECT_EQ(readLe<uint32_t>(single, L::kOffVersion), 1u);
  EXPECT_EQ(readLe<uint32_t>(single, L::kOffSectionCount), 8u);
  // The same container as its own nested image: no device_parts, so the same bytes.
  EXPECT_EQ(single, images_[0]);
  const auto image = QpcImage::fromBytes(single);
  EXPECT_EQ(image->deviceCount(), 1u);
  EXPECT_TRUE(image->deviceParts().empty());
  EXPECT_TRUE(image->contents().partitionConfig.empty());
}

TEST_F(DeviceParts, WriterRefusesOnePartOrMoreThanSixteen) {
  outer_.contents.deviceParts.resize(1);
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts.count");
  outer_.contents.deviceParts.clear();
  for (uint32_t i = 0; i < 17; ++i)
    outer_.contents.deviceParts.push_back(
        part(i, 1, i ? std::span<const std::byte>(images_[0]) : std::span<const std::byte>()));
  expectWriterRefuses(QpcErrorCode::AbsurdCount, "device_parts.count");
}

TEST_F(DeviceParts, WriterRefusesASlotListedTwice) {
  outer_.contents.deviceParts[2].slot = 2;
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts[2].slot");
}

TEST_F(DeviceParts, WriterRefusesCoreCountsOutsideOneToSixteen) {
  outer_.contents.deviceParts[1].numCores = 0;
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts[1].num_cores");
  outer_.contents.deviceParts[1].numCores = 17;
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts[1].num_cores");
}

TEST_F(DeviceParts, WriterRefusesMisplacedImagesAndAMissingConfig) {
  outer_.contents.deviceParts[0].image = images_[0];
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts[0].image");
  outer_.contents.deviceParts[0].image = {};
  outer_.contents.deviceParts[1].image = {};
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts[1].image");
  outer_.contents.deviceParts[1].image = images_[0];
  outer_.contents.partitionConfig.clear();
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts.partition_config");
  outer_.contents.partitionConfig = kConfig;
  outer_.contents.deviceParts.clear();
  expectWriterRefuses(QpcErrorCode::BadValue, "device_parts.partition_config");
}

TEST_F(DeviceParts, WriterRefusesANestedImageWithPartsOfItsOwn) {
  const auto nestedMultiDevice = serializeQpc(outer_.contents);
  outer_.contents.deviceParts[1].image = nestedMultiDevice;
  expectWriterRefuses(QpcErrorCode::BadVersion, "device_parts[1].header.version");
}

TEST_F(DeviceParts, WriterRefusesADamagedNestedImageNamingThePart) {
  std::vector<std::byte> damaged = images_[1];
  damaged[0] = std::byte{'X'};
  outer_.contents.deviceParts[2].image = damaged;
  expectWriterRefuses(QpcErrorCode::BadMagic, "device_parts[2].header.magic");
}

// Damage to a written multi-device container, the checksum repaired after it.
class DevicePartsDamage : public DeviceParts {
 protected:
  void SetUp() override { bytes_ = serializeQpc(outer_.contents); }
  std::vector<std::byte> bytes_;
};

constexpr std::size_t entry(std::size_t part, std::size_t field) {
  return L::kPartsHeaderSize + part * L::kPartEntrySize + field;
}

const FieldDamage kPartsDamage[] = {
    {"OnePart", Table, L::Section::DeviceParts, 4, sizeof(uint32_t), 1, QpcErrorCode::BadValue, "device_parts.count"},
    {"NoParts", Table, L::Section::DeviceParts, 4, sizeof(uint32_t), 0, QpcErrorCode::BadValue, "device_parts.count"},
    {"SeventeenParts", Table, L::Section::DeviceParts, 4, sizeof(uint32_t), 17, QpcErrorCode::AbsurdCount,
     "device_parts.count"},
    {"SectionTooSmallForItsEntries", Table, L::Section::DeviceParts, 16, sizeof(uint64_t), 64,
     QpcErrorCode::AbsurdCount, "device_parts.size"},
    {"SectionMisaligned", Table, L::Section::DeviceParts, 8, sizeof(uint64_t), 8, QpcErrorCode::BadValue,
     "sections[10](device_parts).offset"},
    {"UnknownConnection", Section, L::Section::DeviceParts, 0, sizeof(uint32_t), 7, QpcErrorCode::BadValue,
     "device_parts.connection"},
    {"HeaderReservedSet", Section, L::Section::DeviceParts, 24, sizeof(uint64_t), 1, QpcErrorCode::BadValue,
     "device_parts.reserved"},
    {"EmptyConfig", Section, L::Section::DeviceParts, 16, sizeof(uint64_t), 0, QpcErrorCode::BadValue,
     "device_parts.partition_config_size"},
    {"ConfigInTheEntries", Section, L::Section::DeviceParts, 8, sizeof(uint64_t), 40, QpcErrorCode::OutOfRange,
     "device_parts.partition_config_offset"},
    {"SlotListedTwice", Section, L::Section::DeviceParts, entry(2, 0), sizeof(uint32_t), 2, QpcErrorCode::BadValue,
     "device_parts[2].slot"},
    {"NoCores", Section, L::Section::DeviceParts, entry(1, 4), sizeof(uint32_t), 0, QpcErrorCode::BadValue,
     "device_parts[1].num_cores"},
    {"SeventeenCores", Section, L::Section::DeviceParts, entry(0, 4), sizeof(uint32_t), 17, QpcErrorCode::BadValue,
     "device_parts[0].num_cores"},
    {"EntryReservedSet", Section, L::Section::DeviceParts, entry(1, 56), sizeof(uint64_t), 1, QpcErrorCode::BadValue,
     "device_parts[1].reserved"},
    {"PartZeroWithAnImage", Section, L::Section::DeviceParts, entry(0, 48), sizeof(uint64_t), 64,
     QpcErrorCode::BadValue, "device_parts[0].image_offset"},
    {"ImageOutsideTheSection", Section, L::Section::DeviceParts, entry(2, 40), sizeof(uint64_t), 1u << 20,
     QpcErrorCode::OutOfRange, "device_parts[2].image_offset"},
    {"ImageSizeWrapsAround", Section, L::Section::DeviceParts, entry(2, 48), sizeof(uint64_t), ~uint64_t{0} - 8,
     QpcErrorCode::OutOfRange, "device_parts[2].image_offset"},
    {"ImageInTheEntries", Section, L::Section::DeviceParts, entry(1, 40), sizeof(uint64_t), 0, QpcErrorCode::OutOfRange,
     "device_parts[1].image_offset"},
    {"ImageMisaligned", Section, L::Section::DeviceParts, entry(1, 40), sizeof(uint64_t), 8 * 64 + 8,
     QpcErrorCode::BadValue, "device_parts[1].image_offset"},
    {"EmptyImage", Section, L::Section::DeviceParts, entry(1, 48), sizeof(uint64_t), 0, QpcErrorCode::BadValue,
     "device_parts[1].image_size"},
};

class PartsFieldDamage : public DevicePartsDamage, public ::testing::WithParamInterface<FieldDamage> {};

TEST_P(PartsFieldDamage, IsRejectedNamingTheField) { expectRejected(bytes_, GetParam()); }

INSTANTIATE_TEST_SUITE_P(DeviceParts, PartsFieldDamage, ::testing::ValuesIn(kPartsDamage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(DevicePartsDamage, OverlappingImages) {
  const uint64_t section = sectionOffset(bytes_, L::Section::DeviceParts);
  // Part 2's image where part 1's is.
  writeLe<uint64_t>(bytes_, section + entry(2, 40), readLe<uint64_t>(bytes_, section + entry(1, 40)));
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::Overlap, "device_parts[");
}

TEST_F(DevicePartsDamage, ImageOverlappingTheConfig) {
  const uint64_t section = sectionOffset(bytes_, L::Section::DeviceParts);
  // The config follows the 3 entries at 224 and is longer than 32 bytes: 256 is inside it.
  ASSERT_EQ(readLe<uint64_t>(bytes_, section + 8), entry(3, 0));
  ASSERT_GT(readLe<uint64_t>(bytes_, section + 16), 32u);
  writeLe<uint64_t>(bytes_, section + entry(1, 40), 256);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::Overlap, "device_parts[");
}

TEST_F(DevicePartsDamage, DamagedNestedImageNamesThePart) {
  // A byte of part 2's nested container changed; the outer checksum repaired, not the inner one.
  bytes_[imageAt(bytes_, 2) + 100] ^= std::byte{0x5a};
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadCrc, "device_parts[2].header.crc32");
  try {
    QpcImage::fromBytes(bytes_, "damaged.bin");
  } catch (const QpcFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("damaged.bin: device_parts[2]: header.crc32"), std::string::npos) << e.what();
  }
}

TEST_F(DevicePartsDamage, NestedImageWithPartsOfItsOwn) {
  writeLe<uint32_t>(bytes_, imageAt(bytes_, 1) + L::kOffVersion, 4);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadVersion, "device_parts[1].header.version");
}

TEST_F(DevicePartsDamage, EveryTruncationIsRejected) { expectEveryTruncationRejected(bytes_); }

// Every single-byte change of the section is a valid container or a QpcFormatError.
TEST_F(DevicePartsDamage, EverySingleByteFlipOfTheSectionIsHandled) {
  const auto original = bytes_;
  const uint64_t section = sectionOffset(original, L::Section::DeviceParts);
  std::size_t rejected = 0;
  for (std::size_t at = section; at < original.size(); ++at) {
    bytes_ = original;
    bytes_[at] ^= std::byte{0x80};
    fixCrc(bytes_);
    try {
      QpcImage::fromBytes(bytes_);
    } catch (const QpcFormatError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, L::kPartsHeaderSize + 3 * L::kPartEntrySize);
}

TEST_F(DeviceParts, ResourcesPerPartFromEachPartsOwnContainer) {
  const auto bytes = serializeQpc(outer_.contents);
  const auto image = QpcImage::fromBytes(bytes);
  const auto needs = devicePartNeeds(image->contents(), 0, 2);
  ASSERT_EQ(needs.size(), 3u);
  EXPECT_EQ(needs[0].slot, 2u);
  EXPECT_EQ(needs[1].slot, 0u);
  EXPECT_EQ(needs[2].slot, 5u);
  // Parts 0 and 1 are the sample: 3 NSPs per activation; part 2 runs on 2 with retained state.
  EXPECT_EQ(needs[0].resources.numNsp, 6u);
  EXPECT_EQ(needs[1].resources.numNsp, 6u);
  EXPECT_EQ(needs[2].resources.numNsp, 4u);
  EXPECT_EQ(needs[0].memory.retainedState, 0u);
  EXPECT_EQ(needs[2].memory.retainedState, 4096u);
  EXPECT_EQ(needs[2].resources.ddrSize, 29u + 2 * (24576u + 4096u));
  // The writer's input (nested images still bytes) gives the same answer.
  const auto fromInput = devicePartNeeds(outer_.contents, 0, 2);
  ASSERT_EQ(fromInput.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(fromInput[i].resources.ddrSize, needs[i].resources.ddrSize) << i;
  EXPECT_THROW(devicePartNeeds(image->contents(), 1, 1), std::invalid_argument);
  // Each card must hold the largest part, field by field: part 0's NSPs, part 2's memory.
  const rt::Resources each = largestPartNeeds(image->contents(), 0, 2);
  EXPECT_EQ(each.numNsp, 6u);
  EXPECT_EQ(each.ddrSize,
            std::max({needs[0].resources.ddrSize, needs[1].resources.ddrSize, needs[2].resources.ddrSize}));
  EXPECT_GT(each.ddrSize, needs[0].resources.ddrSize);
}

TEST_F(DeviceParts, ResourcesOfASingleDeviceProgramAreUnchanged) {
  const QpcContents& single = first_.contents;
  const auto needs = devicePartNeeds(single, 0, 3);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].slot, 0u);
  const rt::Resources alone = resourceNeeds(single, single.programs[0], 3);
  EXPECT_EQ(needs[0].resources.numNsp, alone.numNsp);
  EXPECT_EQ(needs[0].resources.ddrSize, alone.ddrSize);
  EXPECT_EQ(needs[0].memory.total(), deviceMemoryNeeds(single, single.programs[0], 3).total());
}

}  // namespace
}  // namespace qaic::container
