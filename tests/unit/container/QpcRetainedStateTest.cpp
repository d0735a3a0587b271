// Version 2 of the container: retained state and per-specialization payloads survive a round trip,
// a container without them stays version 1, and every damage to the new entries is rejected
// naming the field.
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

// The sample plus one retained pair and a payload for allowed shape combination 2.
struct RetainedSample : testing::SampleContents {
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

std::size_t tableEntry(L::Section kind) {
  return L::kHeaderSize + (static_cast<uint32_t>(kind) - 1) * L::kSectionEntrySize;
}

template <typename T>
T get(const std::vector<std::byte>& bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

template <typename T>
void put(std::vector<std::byte>& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

void fixCrc(std::vector<std::byte>& bytes) {
  const auto* body = reinterpret_cast<const Bytef*>(bytes.data() + L::kHeaderSize);
  put<uint32_t>(bytes, L::kOffCrc, static_cast<uint32_t>(crc32_z(0, body, bytes.size() - L::kHeaderSize)));
}

void expectRejected(const std::vector<std::byte>& bytes, QpcErrorCode code, const std::string& field) {
  try {
    QpcImage::fromBytes(bytes, "retained.bin");
    ADD_FAILURE() << "accepted a container that should fail with " << qpcErrorCodeName(code) << " at " << field;
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.field().rfind(field, 0), 0u) << "field " << e.field() << ", message " << e.what();
  }
}

TEST(QpcRetainedState, RetainedStateAndSpecializationPayloadsSurviveARoundTrip) {
  RetainedSample sample;
  const auto bytes = serializeQpc(sample.contents);
  EXPECT_EQ(get<uint32_t>(bytes, L::kOffVersion), 2u);
  EXPECT_EQ(get<uint32_t>(bytes, L::kOffSectionCount), 10u);
  const auto image = QpcImage::fromBytes(bytes);
  EXPECT_EQ(image->contents().formatVersion, 2u);
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
  testing::SampleContents sample;
  const auto bytes = serializeQpc(sample.contents);
  EXPECT_EQ(get<uint32_t>(bytes, L::kOffVersion), 1u);
  EXPECT_EQ(get<uint32_t>(bytes, L::kOffSectionCount), 8u);
  const auto image = QpcImage::fromBytes(bytes);
  EXPECT_EQ(image->contents().formatVersion, 1u);
  EXPECT_TRUE(image->retainedState().empty());
}

TEST(QpcRetainedState, VersionAndSectionCountMustAgree) {
  RetainedSample sample;
  auto bytes = serializeQpc(sample.contents);
  put<uint32_t>(bytes, L::kOffVersion, 1);  // a version-1 header over ten sections
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
  std::size_t retainedAt() const { return get<uint64_t>(bytes_, tableEntry(L::Section::RetainedState) + 8); }
  std::size_t specializationAt() const {
    return get<uint64_t>(bytes_, tableEntry(L::Section::SpecializationPayloads) + 8);
  }
  RetainedSample sample_;
  std::vector<std::byte> bytes_;
};

TEST_F(RetainedCorruption, BadDtype) {
  put<uint8_t>(bytes_, retainedAt() + 16, 200);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadValue, "retained_state[0].dtype");
}

TEST_F(RetainedCorruption, SizeThatDoesNotMatchTheDims) {
  put<uint64_t>(bytes_, retainedAt() + 24, 4096);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadValue, "retained_state[0].size");
}

TEST_F(RetainedCorruption, ZeroDimension) {
  put<int64_t>(bytes_, retainedAt() + 32 + 16, 0);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadValue, "retained_state[0].dims[2]");
}

TEST_F(RetainedCorruption, NameOutsideTheStringTable) {
  put<uint32_t>(bytes_, retainedAt() + 4, 100000);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadString, "retained_state[0].state_name");
}

TEST_F(RetainedCorruption, ReservedBytesSet) {
  put<uint32_t>(bytes_, retainedAt() + 20, 1);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadValue, "retained_state[0].reserved");
}

TEST_F(RetainedCorruption, SpecializationOfAMissingProgram) {
  put<uint32_t>(bytes_, specializationAt(), 5);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::BadValue, "specialization_payloads[0].program_index");
}

TEST_F(RetainedCorruption, SpecializationOfAMissingCombination) {
  for (uint32_t combination : {0u, 3u}) {
    auto bytes = bytes_;
    put<uint32_t>(bytes, specializationAt() + 4, combination);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, "specialization_payloads[0].combination");
  }
}

TEST_F(RetainedCorruption, SpecializationPayloadOutsideThePayloads) {
  put<uint64_t>(bytes_, specializationAt() + 8, 1u << 30);
  fixCrc(bytes_);
  expectRejected(bytes_, QpcErrorCode::OutOfRange, "specialization_payloads[0].payload_offset");
  put<uint64_t>(bytes_, specializationAt() + 8, 0);
  put<uint64_t>(bytes_, specializationAt() + 16, 0);
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
