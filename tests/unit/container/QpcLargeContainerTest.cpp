// SPDX-License-Identifier: Apache-2.0
// Containers as large as real models make them: the streaming writer gives the bytes the
// in-memory one gives, a constant_data section past 4 GiB (with a constant crossing the 4 GiB
// offset) is written sparse and read back field by field, and an encoder that fails mid-write
// leaves no file behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "QpcTestContents.hpp"
#include "TempDir.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::container {
namespace {

using testing::SampleContents;

constexpr uint64_t k4GiB = 4ull << 30;

std::vector<std::byte> fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// An encoder that fills units of one byte with `value` (0: the constant is all holes).
std::shared_ptr<ConstantEncoder> filled(uint64_t bytes, std::byte value) {
  auto encoder = std::make_shared<ConstantEncoder>();
  encoder->storedBytes = bytes;
  encoder->unitBytes = 1;
  encoder->encode = [value](uint64_t, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), static_cast<int>(value), out.size());
  };
  return encoder;
}

QpcConstant encodedConstant(const std::string& name, uint64_t bytes, std::shared_ptr<ConstantEncoder> encoder) {
  QpcConstant c;
  c.tensor = {name, ir::DType::UInt8, {static_cast<int64_t>(bytes)}, {}};
  c.encoder = std::move(encoder);
  return c;
}

std::size_t filesIn(const std::filesystem::path& dir) {
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  return files;
}

TEST(QpcLargeContainer, StreamedFileHasTheInMemoryBytesWithEncodedConstants) {
  SampleContents sample;
  // 5 MiB of fp16-like units (two bytes each, varying), so the stream takes several chunks.
  auto encoder = std::make_shared<ConstantEncoder>();
  encoder->unitBytes = 2;
  encoder->storedBytes = 5ull << 20;
  encoder->encode = [](uint64_t first, uint64_t count, std::span<std::byte> out) {
    for (uint64_t i = 0; i < count; ++i) {
      const auto unit = static_cast<uint16_t>((first + i) * 2654435761u >> 7);
      std::memcpy(out.data() + i * 2, &unit, 2);
    }
  };
  QpcConstant big = encodedConstant("big", encoder->storedBytes, encoder);
  big.tensor.dtype = ir::DType::Float16;
  big.tensor.dims = {static_cast<int64_t>(encoder->storedBytes / 2)};
  sample.contents.constants.push_back(big);
  // And a constant of zeros that the file keeps as a hole.
  sample.contents.constants.push_back(encodedConstant("zeros", 9ull << 20, filled(9ull << 20, std::byte{0})));
  for (uint32_t i = 0; i < sample.contents.constants.size(); ++i) sample.contents.constants[i].index = i;

  const std::vector<std::byte> inMemory = serializeQpc(sample.contents);
  const qaic::testing::TempDir dir("qpc-stream");
  const auto path = (dir / "programqpc.bin").string();
  writeQpcFile(path, sample.contents);
  EXPECT_TRUE(fileBytes(path) == inMemory);
  const auto image = QpcImage::open(path);
  ASSERT_EQ(image->constants().size(), 4u);
  EXPECT_EQ(image->constants()[2].tensor.data.size(), 5ull << 20);
  uint16_t unit = 0;
  std::memcpy(&unit, image->constants()[2].tensor.data.data() + 2 * 1000, 2);
  EXPECT_EQ(unit, static_cast<uint16_t>(1000 * 2654435761u >> 7));
}

TEST(QpcLargeContainer, SectionPast4GiBIsSparseAndReadsBackRight) {
  SampleContents sample;
  // Holes up to just before 4 GiB of constant data, then a constant of real bytes across the
  // 4 GiB offset of the section (and of the file), then another one wholly past it.
  const uint64_t crossingSize = 3ull << 20;
  std::vector<std::byte> crossing(crossingSize);
  for (std::size_t i = 0; i < crossing.size(); ++i) crossing[i] = std::byte(i % 251 + 1);
  const uint64_t leading = k4GiB - (1ull << 20);  // the crossing constant starts 1 MiB before 4 GiB
  auto& constants = sample.contents.constants;
  constants.clear();
  constants.push_back(encodedConstant("holes", leading, filled(leading, std::byte{0})));
  QpcConstant across;
  across.tensor = {"across", ir::DType::UInt8, {static_cast<int64_t>(crossingSize)}, crossing};
  constants.push_back(across);
  constants.push_back(encodedConstant("past", 4096, filled(4096, std::byte{0x5a})));
  for (uint32_t i = 0; i < constants.size(); ++i) constants[i].index = i;
  // Retained state makes a version-2 file, whose last two sections then lie past 4 GiB too.
  QpcRetainedState state;
  state.name = "past_key";
  state.stateName = "past_key_RetainedState";
  state.tensor = "pk";
  state.stateTensor = "pk_out";
  state.dtype = ir::DType::Float16;
  state.dims = {1, 8, 1024, 64};
  state.size = 8ull * 1024 * 64 * 2;
  sample.contents.retainedState = {state};

  const qaic::testing::TempDir dir("qpc-4g");
  const auto path = (dir / "programqpc.bin").string();
  const auto started = std::chrono::steady_clock::now();
  writeQpcFile(path, sample.contents);
  const auto written = std::chrono::steady_clock::now();

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GT(static_cast<uint64_t>(st.st_size), k4GiB);
  // Sparse on disk: the holes take no blocks (the data is a few MiB).
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 64ull << 20) << "st_blocks " << st.st_blocks;

  const auto image = QpcImage::open(path);  // verifies the CRC over the whole file
  const auto opened = std::chrono::steady_clock::now();
  const auto* base = image->bytes().data();
  ASSERT_EQ(image->constants().size(), 3u);
  const QpcConstant& holes = image->constants()[0];
  const QpcConstant& readAcross = image->constants()[1];
  const QpcConstant& past = image->constants()[2];
  EXPECT_EQ(holes.tensor.name, "holes");
  EXPECT_EQ(holes.tensor.data.size(), leading);
  EXPECT_EQ(readAcross.tensor.name, "across");
  EXPECT_EQ(readAcross.index, 1u);
  EXPECT_EQ(readAcross.tensor.dims, (ir::Dims{static_cast<int64_t>(crossingSize)}));
  ASSERT_EQ(readAcross.tensor.data.size(), crossingSize);
  const uint64_t acrossAt = static_cast<uint64_t>(readAcross.tensor.data.data() - base);
  EXPECT_LT(acrossAt, k4GiB);
  EXPECT_GT(acrossAt + crossingSize, k4GiB);
  EXPECT_TRUE(std::equal(crossing.begin(), crossing.end(), readAcross.tensor.data.begin()));
  const uint64_t pastAt = static_cast<uint64_t>(past.tensor.data.data() - base);
  EXPECT_GT(pastAt, k4GiB);
  EXPECT_EQ(pastAt % kConstantAlignment, 0u);
  ASSERT_EQ(past.tensor.data.size(), 4096u);
  EXPECT_EQ(past.tensor.data[0], std::byte{0x5a});
  EXPECT_EQ(past.tensor.data[4095], std::byte{0x5a});
  EXPECT_EQ(image->contents().formatVersion, 2u);
  ASSERT_EQ(image->retainedState().size(), 1u);
  EXPECT_EQ(image->retainedState()[0].stateName, "past_key_RetainedState");
  EXPECT_EQ(image->retainedState()[0].size, state.size);
  EXPECT_EQ(image->retainedState()[0].dims, state.dims);
  ASSERT_EQ(image->programs().size(), 1u);
  EXPECT_EQ(image->programs()[0].name, "net");
  EXPECT_EQ(image->buffers().size(), 2u);
  EXPECT_EQ(image->bytes().size(), static_cast<uint64_t>(st.st_size));
  using ms = std::chrono::milliseconds;
  std::printf("4 GiB sparse container: write %lld ms, open %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<ms>(written - started).count()),
              static_cast<long long>(std::chrono::duration_cast<ms>(opened - written).count()));

  // A flipped byte past 4 GiB is caught by the hole-aware checksum.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(pastAt + 17));
    f.put('\x00');
  }
  try {
    QpcImage::open(path);
    FAIL() << "a corrupted byte past 4 GiB went unnoticed";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.code(), QpcErrorCode::BadCrc);
  }
}

TEST(QpcLargeContainer, EncoderFailingMidWriteLeavesNoFileAndKeepsThePreviousOne) {
  SampleContents sample;
  const qaic::testing::TempDir dir("qpc-fail");
  const auto path = (dir / "programqpc.bin").string();
  writeQpcFile(path, sample.contents);
  const std::vector<std::byte> previous = fileBytes(path);

  auto encoder = std::make_shared<ConstantEncoder>();
  encoder->unitBytes = 1;
  encoder->storedBytes = 12ull << 20;  // three chunks: the second one fails
  encoder->encode = [](uint64_t first, uint64_t, std::span<std::byte> out) {
    if (first > 0) throw std::runtime_error("encoder ran out of source");
    std::memset(out.data(), 1, out.size());
  };
  sample.contents.constants.push_back(encodedConstant("failing", encoder->storedBytes, encoder));
  sample.contents.constants.back().index = 2;
  try {
    writeQpcFile(path, sample.contents);
    FAIL() << "the encoder's failure was not reported";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.field(), "constants[2].encoder");
    EXPECT_NE(std::string(e.what()).find("ran out of source"), std::string::npos) << e.what();
  }
  EXPECT_EQ(filesIn(dir.path()), 1u);  // no temporary left
  EXPECT_TRUE(fileBytes(path) == previous);

  const auto fresh = (dir / "fresh.bin").string();
  EXPECT_THROW(writeQpcFile(fresh, sample.contents), QpcFormatError);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_EQ(filesIn(dir.path()), 1u);
}

TEST(QpcLargeContainer, EncoderWhoseSizeIsNotWholeUnitsIsRefusedNamingTheConstant) {
  SampleContents sample;
  auto encoder = filled(10, std::byte{1});
  encoder->unitBytes = 4;
  sample.contents.constants.push_back(encodedConstant("odd", 10, encoder));
  sample.contents.constants.back().index = 2;
  try {
    serializeQpc(sample.contents);
    FAIL() << "an encoder of 10 bytes in 4-byte units was accepted";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.field(), "constants[2].encoder");
  }
}

}  // namespace
}  // namespace qaic::container
