// SPDX-License-Identifier: Apache-2.0
// The weights side file: round trip, alignment, atomic write, every corruption the reader must
// reject, and binding `create ... from_file` ops to it.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "IrTestUtil.hpp"
#include "TempDir.hpp"
#include "ir/Weights.hpp"

namespace qaic::ir::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Byte offsets of the layout in docs/formats/ir.md.
constexpr std::size_t kCountOffset = 12;
constexpr std::size_t kFileSizeOffset = 16;
constexpr std::size_t kEntry0 = 32;
constexpr std::size_t kEntrySize = 96;
constexpr std::size_t kNameOffset = 0, kDTypeOffset = 12, kRankOffset = 13, kDataOffset = 80, kDataSize = 88;

class WeightsFileTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = (dir_ / "w.bin").string(); }

  void writeSample() {
    floats_ = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f};
    ints_ = {7, -8, 9};
    const WeightTensor tensors[] = {
        {"conv.w", DType::Float, {2, 3}, std::as_bytes(std::span(floats_))},
        {"idx", DType::Int64, {3}, std::as_bytes(std::span(ints_))},
        {"scalar", DType::Float, {}, std::as_bytes(std::span(floats_).first(1))},
    };
    writeWeightsFile(path_, tensors);
  }

  std::vector<char> bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void store(const std::vector<char>& data) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  template <typename T>
  void patch(std::size_t offset, T value) {
    std::vector<char> data = bytes();
    ASSERT_LE(offset + sizeof(T), data.size());
    std::memcpy(data.data() + offset, &value, sizeof(T));
    store(data);
  }
  template <typename T>
  T read(std::size_t offset) const {
    T value{};
    std::memcpy(&value, bytes().data() + offset, sizeof(T));
    return value;
  }
  std::string openError() const {
    try {
      WeightsFile::open(path_);
    } catch (const IrError& e) {
      return e.what();
    }
    return "";
  }

  qaic::testing::TempDir dir_{"ir-weights"};
  std::string path_;
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
};

TEST_F(WeightsFileTest, RoundTripsNamesTypesDimsAndData) {
  writeSample();
  auto file = WeightsFile::open(path_);
  ASSERT_EQ(file->tensors().size(), 3u);
  const WeightTensor* w = file->find("conv.w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::Float);
  EXPECT_EQ(w->dims, (Dims{2, 3}));
  ASSERT_EQ(w->data.size(), 24u);
  EXPECT_EQ(std::memcmp(w->data.data(), floats_.data(), 24), 0);
  const WeightTensor* idx = file->find("idx");
  ASSERT_NE(idx, nullptr);
  EXPECT_EQ(idx->dtype, DType::Int64);
  int64_t second = 0;
  std::memcpy(&second, idx->data.data() + 8, 8);
  EXPECT_EQ(second, -8);
  const WeightTensor* scalar = file->find("scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(scalar->dims.empty());
  EXPECT_EQ(scalar->data.size(), 4u);
  EXPECT_EQ(file->find("nope"), nullptr);
  for (const auto& t : file->tensors()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data.data()) % 64, 0u) << t.name;
  }
}

TEST_F(WeightsFileTest, EmptyFileHasNoTensors) {
  writeWeightsFile(path_, {});
  EXPECT_TRUE(WeightsFile::open(path_)->tensors().empty());
}

TEST_F(WeightsFileTest, WriteIsAtomicAndLeavesNoTemporaries) {
  writeSample();
  writeSample();  // replaces
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "w.bin");
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(WeightsFileTest, WriterRejectsBadTensors) {
  std::vector<float> data(3);
  const WeightTensor wrongSize[] = {{"a", DType::Float, {2, 2}, std::as_bytes(std::span(data))}};
  EXPECT_THROW(writeWeightsFile(path_, wrongSize), IrError);
  const WeightTensor duplicate[] = {{"a", DType::Float, {3}, std::as_bytes(std::span(data))},
                                    {"a", DType::Float, {3}, std::as_bytes(std::span(data))}};
  EXPECT_THROW(writeWeightsFile(path_, duplicate), IrError);
  const WeightTensor unnamed[] = {{"", DType::Float, {3}, std::as_bytes(std::span(data))}};
  EXPECT_THROW(writeWeightsFile(path_, unnamed), IrError);
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_THROW(writeWeightsFile((dir_ / "missing" / "w.bin").string(), {}), IrError);
}

TEST_F(WeightsFileTest, MissingFile) { EXPECT_THAT(openError(), HasSubstr("cannot open weights file")); }

TEST_F(WeightsFileTest, Truncated) {
  writeSample();
  std::vector<char> data = bytes();
  data.resize(data.size() - 4);
  store(data);
  EXPECT_THAT(openError(), HasSubstr("corrupt weights file: header says"));
  data.resize(20);
  store(data);
  EXPECT_THAT(openError(), HasSubstr("file of 20 bytes is shorter than the header"));
}

TEST_F(WeightsFileTest, BadMagicAndVersion) {
  writeSample();
  patch<char>(0, 'X');
  EXPECT_THAT(openError(), HasSubstr(path_ + ": corrupt weights file: bad magic"));
  writeSample();
  patch<uint32_t>(8, 2);
  EXPECT_THAT(openError(), HasSubstr("unsupported version 2"));
}

TEST_F(WeightsFileTest, AbsurdCount) {
  writeSample();
  patch<uint32_t>(kCountOffset, 0xFFFFFFFFu);
  EXPECT_THAT(openError(), HasSubstr("entry count 4294967295 does not fit the file"));
}

TEST_F(WeightsFileTest, DataOffsetPastEnd) {
  writeSample();
  const auto size = read<uint64_t>(kFileSizeOffset);
  patch<uint64_t>(kEntry0 + kDataOffset, (size + 64) / 64 * 64);
  EXPECT_THAT(openError(), HasSubstr("entry 0: 'conv.w': data offset"));
  EXPECT_THAT(openError(), HasSubstr("outside the file"));
  writeSample();
  patch<uint64_t>(kEntry0 + kDataOffset, ~uint64_t{63});  // offset + size overflows
  EXPECT_THAT(openError(), HasSubstr("outside the file"));
}

TEST_F(WeightsFileTest, OverlappingData) {
  writeSample();
  const auto first = read<uint64_t>(kEntry0 + kDataOffset);
  patch<uint64_t>(kEntry0 + kEntrySize + kDataOffset, first);
  EXPECT_THAT(openError(), HasSubstr("overlaps"));
}

TEST_F(WeightsFileTest, MisalignedAndOverlappingTheTable) {
  writeSample();
  patch<uint64_t>(kEntry0 + kDataOffset, read<uint64_t>(kEntry0 + kDataOffset) + 4);
  EXPECT_THAT(openError(), HasSubstr("data offset not 64-byte aligned"));
  writeSample();
  patch<uint64_t>(kEntry0 + kDataOffset, 0);
  EXPECT_THAT(openError(), HasSubstr("outside the file"));
}

TEST_F(WeightsFileTest, BadEntryFields) {
  writeSample();
  patch<uint8_t>(kEntry0 + kDTypeOffset, 200);
  EXPECT_THAT(openError(), HasSubstr("unknown dtype code 200"));
  writeSample();
  patch<uint8_t>(kEntry0 + kRankOffset, 9);
  EXPECT_THAT(openError(), HasSubstr("rank 9 > 8"));
  writeSample();
  patch<uint64_t>(kEntry0 + kDataSize, 28);
  EXPECT_THAT(openError(), HasSubstr("data size 28 != 24 for its dtype and dims"));
  writeSample();
  patch<uint64_t>(kEntry0 + kNameOffset, uint64_t{1} << 40);
  EXPECT_THAT(openError(), HasSubstr("entry 0: name outside the file"));
  writeSample();
  patch<int64_t>(kEntry0 + 16, -2);  // dims[0]
  EXPECT_THAT(openError(), HasSubstr("negative dim"));
}

TEST_F(WeightsFileTest, DuplicateNames) {
  writeSample();
  // Point entry 1's name at entry 0's name bytes (same length prefix "idx" vs "con").
  patch<uint64_t>(kEntry0 + kEntrySize + kNameOffset, read<uint64_t>(kEntry0 + kNameOffset));
  patch<uint32_t>(kEntry0 + kEntrySize + 8, read<uint32_t>(kEntry0 + 8));
  EXPECT_THAT(openError(), HasSubstr("duplicate tensor name 'conv.w'"));
}

Json fromFile(const std::string& tensor, const std::string& dtype, const Dims& dims) {
  return makeOp("load_" + tensor, "create", {}, {{"dst", tensor}},
                {{"dtype", dtype}, {"dims", dims}, {"ran", {0, 0}}, {"data", {0}}, {"from_file", true}});
}

std::string bindError(const std::vector<Json>& ops, const WeightsFile& file) {
  try {
    bindWeights(parseGraph(graphText(ops), "net.json"), file);
  } catch (const IrError& e) {
    return e.what();
  }
  return "";
}

TEST_F(WeightsFileTest, BindWeightsChecksEveryFromFileCreate) {
  writeSample();
  auto file = WeightsFile::open(path_);
  EXPECT_EQ(
      bindError({fromFile("conv.w", "TL_FLOAT", {6}), fromFile("idx", "TL_INT64", {3, 1}), makeTensor("other", {4})},
                *file),
      "");
  EXPECT_EQ(bindError({fromFile("missing", "TL_FLOAT", {6})}, *file),
            "net.json: op 'load_missing' (create): param 'from_file': no tensor 'missing' in the "
            "weights file");
  EXPECT_THAT(bindError({fromFile("conv.w", "TL_INT32", {6})}, *file),
              HasSubstr("op 'load_conv.w' (create): param 'dtype': TL_INT32 != weights file dtype TL_FLOAT"));
  EXPECT_THAT(bindError({fromFile("conv.w", "TL_FLOAT", {7})}, *file),
              HasSubstr("param 'dims': [7] holds 7 elements, weights file tensor [2,3] holds 6"));
}

TEST(WeightsPath, RelativeToTheIrFile) {
  Graph graph;
  graph.sourceName = "/models/net/net.json";
  EXPECT_EQ(weightsPath(graph), "");
  graph.weightsFile = "net.weights.bin";
  EXPECT_EQ(weightsPath(graph), "/models/net/net.weights.bin");
  graph.weightsFile = "/abs/w.bin";
  EXPECT_EQ(weightsPath(graph), "/abs/w.bin");
}

}  // namespace
}  // namespace qaic::ir::test
