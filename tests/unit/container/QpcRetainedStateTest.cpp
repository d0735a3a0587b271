// SPDX-License-Identifier: Apache-2.0
// Version 2 of the container: retained state and per-specialization payloads survive a round trip,
// a container without them stays version 1, and every damage to the new entries is rejected
// naming the field.
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

// The sample plus one retained pair and a payload for allowed shape combination 2.
struct RetainedSample : SampleContents {
  std::string specializedPayload = R"({"ops":[],"io":[]})";
  RetainedSample() {
    QpcRetainedState r;
    r.name = "past_key.0";
    r.stateName = "past_key.0_RetainedState";
    r.tensor = "past_key_0";
    r.stateTensor = "present_key_0";
    r.dtype = ir::DType::Float16;
    r.dims = {1, 2, 128, 4};
    r.size = 1 * 2 * 128 * 4 * 2;
    contents.retainedState = {r};
    contents.specializationPayloads = {
        {0, 2, std::as_bytes(std::span(specializedPayload.data(), specializedPayload.size()))}};
  }
};

// A serialized container and the image that views its bytes (declared first: they outlive it).
struct Loaded {
  std::vector<std::byte> bytes;
  std::unique_ptr<QpcImage> image;
  const QpcImage* operator->() const { return image.get(); }
};

// Serializes `contents`, expects a header of `version` over `sections` sections, and loads it.
Loaded serializedAsVersion(const QpcContents& contents, uint32_t version, uint32_t sections) {
  Loaded loaded{serializeQpc(contents), nullptr};
  EXPECT_EQ(readLe<uint32_t>(loaded.bytes, L::kOffVersion), version);
  EXPECT_EQ(readLe<uint32_t>(loaded.bytes, L::kOffSectionCount), sections);
  loaded.image = QpcImage::fromBytes(loaded.bytes);
  EXPECT_EQ(loaded->contents().formatVersion, version);
  return loaded;  // moving the vector keeps the buffer the image views
}

TEST(QpcRetainedState, RetainedStateAndSpecializationPayloadsSurviveARoundTrip) {
  RetainedSample sample;
  const auto image = serializedAsVersion(sample.contents, 2, 10);
  ASSERT_EQ(image->retainedState().size(), 1u);
  const QpcRetainedState& r = image->retainedState()[0];
  EXPECT_EQ(r.name, "past_key.0");
  EXPECT_EQ(r.stateName, "past_key.0_RetainedState");
  EXPECT_EQ(r.tensor, "past_key_0");
  EXPECT_EQ(r.stateTensor, "present_key_0");
  EXPECT_EQ(r.dtype, ir::DType::Float16);
  EXPECT_EQ(r.dims, (ir::Dims{1, 2, 128, 4}));
  EXPECT_EQ(r.size, 2048u);
  EXPECT_EQ(image->findRetained("past_key.0_RetainedState"), &r);
  EXPECT_EQ(image->findRetained("image"), nullptr);
  EXPECT_EQ(image->findBuffer("past_key.0"), nullptr);  // never a buffer the user maps
  const QpcProgram& program = image->programs()[0];
  auto text = [](std::span<const std::byte> b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  EXPECT_EQ(text(image->payloadFor(program, 2)), sample.specializedPayload);
  EXPECT_EQ(text(image->payloadFor(program, 1)), sample.payload);  // no payload of its own
  EXPECT_EQ(text(image->payloadFor(program, 0)), sample.payload);
}

TEST(QpcRetainedState, AContainerWithoutThemStaysVersionOne) {
  SampleContents sample;
  const auto image = serializedAsVersion(sample.contents, 1, 8);
  EXPECT_TRUE(image->retainedState().empty());
}

TEST(QpcRetainedState, VersionAndSectionCountMustAgree) {
  RetainedSample sample;
  auto bytes = serializeQpc(sample.contents);
  writeLe<uint32_t>(bytes, L::kOffVersion, 1);  // a version-1 header over ten sections
  expectRejected(bytes, QpcErrorCode::AbsurdCount, "header.section_count");
}

TEST(QpcRetainedState, WriterRejectsARetainedNameThatIsAlsoABuffer) {
  RetainedSample sample;
  sample.contents.retainedState[0].stateName = "scores";
  try {
    serializeQpc(sample.contents);
    ADD_FAILURE() << "wrote a retained pair named like an io buffer";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.field(), "retained_state[0].state_name") << e.what();
  }
}

class RetainedCorruption : public ::testing::Test {
 protected:
  void SetUp() override { bytes_ = serializeQpc(sample_.contents); }
  std::size_t specializationAt() const { return sectionOffset(bytes_, L::Section::SpecializationPayloads); }
  RetainedSample sample_;
  std::vector<std::byte> bytes_;
};

const FieldDamage kRetainedDamage[] = {
    {"BadDtype", Section, L::Section::RetainedState, 16, sizeof(uint8_t), 200, QpcErrorCode::BadValue,
     "retained_state[0].dtype"},
    {"SizeThatDoesNotMatchTheDims", Section, L::Section::RetainedState, 24, sizeof(uint64_t), 4096,
     QpcErrorCode::BadValue, "retained_state[0].size"},
    {"ZeroDimension", Section, L::Section::RetainedState, 32 + 16, sizeof(int64_t), 0, QpcErrorCode::BadValue,
     "retained_state[0].dims[2]"},
    {"NameOutsideTheStringTable", Section, L::Section::RetainedState, 4, sizeof(uint32_t), 100000,
     QpcErrorCode::BadString, "retained_state[0].state_name"},
    {"ReservedBytesSet", Section, L::Section::RetainedState, 20, sizeof(uint32_t), 1, QpcErrorCode::BadValue,
     "retained_state[0].reserved"},
    {"SpecializationOfAMissingProgram", Section, L::Section::SpecializationPayloads, 0, sizeof(uint32_t), 5,
     QpcErrorCode::BadValue, "specialization_payloads[0].program_index"},
    {"SpecializationOfCombinationZero", Section, L::Section::SpecializationPayloads, 4, sizeof(uint32_t), 0,
     QpcErrorCode::BadValue, "specialization_payloads[0].combination"},
    {"SpecializationOfAMissingCombination", Section, L::Section::SpecializationPayloads, 4, sizeof(uint32_t), 3,
     QpcErrorCode::BadValue, "specialization_payloads[0].combination"},
    {"SpecializationPayloadOutsideThePayloads", Section, L::Section::SpecializationPayloads, 8, sizeof(uint64_t),
     1u << 30, QpcErrorCode::OutOfRange, "specialization_payloads[0].payload_offset"},
};

class RetainedFieldDamage : public RetainedCorruption, public ::testing::WithParamInterface<FieldDamage> {};

TEST_P(RetainedFieldDamage, IsRejectedNamingTheField) { expectRejected(bytes_, GetParam()); }

INSTANTIATE_TEST_SUITE_P(RetainedCorruption, RetainedFieldDamage, ::testing::ValuesIn(kRetainedDamage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(RetainedCorruption, SpecializationPayloadOfNoBytes) {
  writeLe<uint64_t>(bytes_, specializationAt() + 8, 0);
  writeLe<uint64_t>(bytes_, specializationAt() + 16, 0);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::OutOfRange, "specialization_payloads[0].payload_offset");
}
TEST_F(RetainedCorruption, EveryTruncationIsRejected) {
  for (std::size_t length = 0; length < bytes_.size(); length += 7) {
    EXPECT_THROW(QpcImage::fromBytes(std::span(bytes_.data(), length)), QpcFormatError) << length;
  }
}

}  // namespace
}  // namespace qaic::container
