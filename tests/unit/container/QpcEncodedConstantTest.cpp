// SPDX-License-Identifier: Apache-2.0
// Encoded constants (qaic-exec -mxfp6-matmul): the entry's encoding and reduction axis survive a
// round trip in a version-3 file; the writer and the reader refuse sizes, encodings and axes
// that do not fit, and an encoded constant in an older version.
#include <gtest/gtest.h>

#include "QpcDamage.hpp"
#include "QpcTestContents.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::container::testing {
namespace {

namespace L = layout;

// SampleContents plus constant "w": a [K = 40, N = 3] float weight, MXFP6 along dims[0]:
// ceil(40 / 32) = 2 blocks of 25 bytes per column.
struct EncodedSample {
  SampleContents sample;
  std::vector<std::byte> encoded = std::vector<std::byte>(2 * 25 * 3, std::byte{0x11});

  EncodedSample() {
    QpcConstant w;
    w.index = static_cast<uint32_t>(sample.contents.constants.size());
    w.tensor = {"w", ir::DType::Float, {40, 3}, encoded, ir::WeightEncoding::Mxfp6E2M3, 0};
    sample.contents.constants.push_back(w);
  }
  std::size_t entry() const { return sample.contents.constants.size() - 1; }
};

std::size_t constantField(const std::vector<std::byte>& bytes, std::size_t entry, std::size_t offset) {
  return sectionOffset(bytes, L::Section::Constants) + entry * L::kConstantEntrySize + offset;
}

TEST(QpcEncodedConstant, EncodingAndAxisSurviveARoundTripInVersion3) {
  EncodedSample s;
  const auto bytes = serializeQpc(s.sample.contents);
  const auto image = QpcImage::fromBytes(bytes);
  EXPECT_EQ(image->contents().formatVersion, 3u);
  const QpcConstant* w = image->findConstant("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->tensor.encoding, ir::WeightEncoding::Mxfp6E2M3);
  EXPECT_EQ(w->tensor.reductionAxis, 0);
  EXPECT_EQ(w->tensor.dtype, ir::DType::Float);
  EXPECT_EQ(w->tensor.data.size(), 150u);
  EXPECT_TRUE(std::equal(w->tensor.data.begin(), w->tensor.data.end(), s.encoded.begin()));
  EXPECT_EQ(image->findConstant(s.sample.contents.constants[0].tensor.name)->tensor.encoding,
            ir::WeightEncoding::Plain);
  // Along dims[1] the same bytes are a [N = 40, K = 3] weight: 1 block per column, 40 columns.
  s.sample.contents.constants.back().tensor.reductionAxis = 1;
  EXPECT_THROW(serializeQpc(s.sample.contents), QpcFormatError);
}

TEST(QpcEncodedConstant, WriterRefusesASizeThatIsNotTheEncodings) {
  EncodedSample s;
  s.encoded.pop_back();
  s.sample.contents.constants.back().tensor.data = s.encoded;
  try {
    serializeQpc(s.sample.contents);
    FAIL() << "accepted";
  } catch (const QpcFormatError& e) {
    EXPECT_EQ(e.field(), "constants[" + std::to_string(s.entry()) + "].size");
  }
}

TEST(QpcEncodedConstant, ReaderRefusesDamagedEncodingFields) {
  EncodedSample s;
  const auto good = serializeQpc(s.sample.contents);
  const std::string field = "constants[" + std::to_string(s.entry()) + "]";
  {
    auto bytes = good;
    writeLe<uint8_t>(bytes, constantField(bytes, s.entry(), 10), 9);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, field + ".encoding");
  }
  {
    auto bytes = good;
    writeLe<uint8_t>(bytes, constantField(bytes, s.entry(), 11), 2);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, field + ".reduction_axis");
  }
  {
    auto bytes = good;  // a plain constant given an axis
    writeLe<uint8_t>(bytes, constantField(bytes, 0, 11), 1);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, "constants[0].reduction_axis");
  }
  {
    auto bytes = good;  // the other axis: a size that is not the encoding's
    writeLe<uint8_t>(bytes, constantField(bytes, s.entry(), 11), 1);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, field + ".size");
  }
  {
    auto bytes = good;  // a version-2 file cannot hold an encoded constant
    writeLe<uint32_t>(bytes, L::kOffVersion, 2);
    fixCrc(bytes);
    expectRejected(bytes, QpcErrorCode::BadValue, field + ".encoding");
  }
}

}  // namespace
}  // namespace qaic::container::testing
