// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "QpcTestContents.hpp"
#include "TempDir.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::container {
namespace {

using testing::SampleContents;

void expectSameBuffer(const QpcBuffer& a, const QpcBuffer& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.io.bufferName, b.io.bufferName);
  EXPECT_EQ(a.io.tensor, b.io.tensor);
  EXPECT_EQ(a.io.direction, b.io.direction);
  EXPECT_EQ(a.io.dtype, b.io.dtype);
  EXPECT_EQ(a.io.dims, b.io.dims);
  EXPECT_EQ(a.io.userLayout, b.io.userLayout);
  EXPECT_EQ(a.io.isPartialAllowed, b.io.isPartialAllowed);
  EXPECT_EQ(a.io.skipPartialHeader, b.io.skipPartialHeader);
  EXPECT_EQ(a.io.allowSkip, b.io.allowSkip);
  EXPECT_EQ(a.io.deviceFormat.layout, b.io.deviceFormat.layout);
  EXPECT_EQ(a.io.deviceFormat.elementType, b.io.deviceFormat.elementType);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.dataType, b.dataType);
  EXPECT_EQ(a.deviceOffset, b.deviceOffset);
  EXPECT_EQ(a.deviceSize, b.deviceSize);
}

void expectSameContents(const QpcContents& expected, const QpcImage& image) {
  ASSERT_EQ(image.buffers().size(), expected.buffers.size());
  for (std::size_t i = 0; i < expected.buffers.size(); ++i) expectSameBuffer(expected.buffers[i], image.buffers()[i]);
  EXPECT_EQ(image.allowedShapes(), expected.allowedShapes);
  ASSERT_EQ(image.programs().size(), expected.programs.size());
  for (std::size_t i = 0; i < expected.programs.size(); ++i) {
    const auto& e = expected.programs[i];
    const auto& a = image.programs()[i];
    EXPECT_EQ(a.name, e.name);
    EXPECT_EQ(a.programIndex, e.programIndex);
    EXPECT_EQ(a.numCores, e.numCores);
    EXPECT_EQ(a.batchSize, e.batchSize);
    EXPECT_EQ(a.numSemaphores, e.numSemaphores);
    EXPECT_EQ(a.numMulticastIds, e.numMulticastIds);
    EXPECT_EQ(a.flags, e.flags);
    EXPECT_EQ(a.doneSemaphore, e.doneSemaphore);
    EXPECT_EQ(a.totalRequiredMemory, e.totalRequiredMemory);
    EXPECT_EQ(a.ioRegionSize, e.ioRegionSize);
    EXPECT_EQ(a.doorbellAddress, e.doorbellAddress);
    EXPECT_EQ(a.requestDescriptorOffset, e.requestDescriptorOffset);
    EXPECT_EQ(a.responseDescriptorOffset, e.responseDescriptorOffset);
    EXPECT_EQ(a.bufferIndices, e.bufferIndices);
    EXPECT_EQ(QpcImage::payloadText(a), QpcImage::payloadText(e));
  }
  ASSERT_EQ(image.constants().size(), expected.constants.size());
  for (std::size_t i = 0; i < expected.constants.size(); ++i) {
    const auto& e = expected.constants[i];
    const auto& a = image.constants()[i];
    EXPECT_EQ(a.index, e.index);
    EXPECT_EQ(a.tensor.name, e.tensor.name);
    EXPECT_EQ(a.tensor.dtype, e.tensor.dtype);
    EXPECT_EQ(a.tensor.dims, e.tensor.dims);
    ASSERT_EQ(a.tensor.data.size(), e.tensor.data.size());
    EXPECT_TRUE(std::equal(a.tensor.data.begin(), a.tensor.data.end(), e.tensor.data.begin()));
  }
}

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

TEST(QpcRoundTrip, EveryFieldSurvivesSerializeAndParse) {
  SampleContents sample;
  const auto bytes = serializeQpc(sample.contents);
  const auto image = QpcImage::fromBytes(bytes);
  expectSameContents(sample.contents, *image);
  EXPECT_EQ(image->bytes().size(), bytes.size());
  EXPECT_EQ(image->ioDescriptorBytes().size(), 2u * 112u);
}

TEST(QpcRoundTrip, ConstantsAndPayloadAreViewsIntoTheBytes) {
  SampleContents sample;
  const auto bytes = serializeQpc(sample.contents);
  const auto image = QpcImage::fromBytes(bytes);
  for (const auto& constant : image->constants()) {
    EXPECT_TRUE(inside(constant.tensor.data, bytes));
    EXPECT_EQ((constant.tensor.data.data() - bytes.data()) % 64, 0);
  }
  EXPECT_TRUE(inside(image->programs()[0].payload, bytes));
  EXPECT_TRUE(inside(image->ioDescriptorBytes(), bytes));
}

TEST(QpcRoundTrip, FileIsWrittenAtomicallyAndMappedOnOpen) {
  SampleContents sample;
  const qaic::testing::TempDir dir("qpc-rt");
  const auto path = (dir / "programqpc.bin").string();
  writeQpcFile(path, sample.contents);
  {
    const auto image = QpcImage::open(path);
    expectSameContents(sample.contents, *image);
    for (const auto& constant : image->constants()) {
      EXPECT_TRUE(inside(constant.tensor.data, image->bytes()));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(constant.tensor.data.data()) % 64, 0u);
    }
    EXPECT_EQ(image->findConstant("bias")->index, 1u);
    EXPECT_EQ(image->findBuffer("scores")->index, 1u);
    EXPECT_EQ(image->findConstant("missing"), nullptr);
    const auto all = image->allShapeCombinations();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0][0], (ir::Dims{2, 3, 4, 8}));
  }
  // Only the container itself is in the directory: no temporary file remains.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(QpcRoundTrip, WriterRejectsContentsTheReaderWouldRejectAndLeavesNoFile) {
  SampleContents sample;
  sample.contents.buffers[1].size = 7;  // not dims x dtype
  const qaic::testing::TempDir dir("qpc-bad");
  const auto path = (dir / "programqpc.bin").string();
  try {
    writeQpcFile(path, sample.contents);
    FAIL() << "writer accepted an inconsistent buffer size";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.code(), QpcErrorCode::BadValue);
    EXPECT_EQ(e.field(), "buffers[1].size");
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(QpcRoundTrip, OpenNamesAMissingFile) {
  try {
    QpcImage::open("/nonexistent-dir/programqpc.bin");
    FAIL() << "opened a missing file";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.code(), QpcErrorCode::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/programqpc.bin"), std::string::npos);
  }
}

TEST(QpcRoundTrip, EmptyContainerIsValid) {
  QpcContents empty;
  const auto bytes = serializeQpc(empty);
  const auto image = QpcImage::fromBytes(bytes);
  EXPECT_TRUE(image->buffers().empty());
  EXPECT_TRUE(image->programs().empty());
  EXPECT_TRUE(image->constants().empty());
}

}  // namespace
}  // namespace qaic::container
