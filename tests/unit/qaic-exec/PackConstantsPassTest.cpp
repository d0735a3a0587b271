// SPDX-License-Identifier: Apache-2.0
// pack-constants: the default specialization's weights, float16 with -convert-to-fp16; MXFP6
// weights are tested end to end (tests/integration/runtime/Mxfp6WeightsTest.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <span>

#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

Compilation withTwoSpecializations(const ExecOptions& options) {
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2, {9, 9, 9, 9}));
  compilation.variants.push_back(testing::twoPathModel(4, {1, 2, 3, 4}));
  compilation.mainVariant = 1;
  return compilation;
}

TEST(PackConstantsPass, PacksTheDefaultSpecializationsWeights) {
  const ExecOptions options;
  Compilation compilation = withTwoSpecializations(options);
  packConstantsPass(compilation);
  ASSERT_EQ(compilation.constants.constants.size(), 1u);
  const ir::WeightTensor& b = compilation.constants.constants[0].tensor;
  EXPECT_EQ(b.name, "b");
  EXPECT_EQ(b.dtype, ir::DType::Float);
  ASSERT_EQ(b.data.size(), 16u);
  float first = 0;
  std::memcpy(&first, b.data.data(), sizeof(first));
  EXPECT_EQ(first, 1.0f);
}

TEST(PackConstantsPass, ConvertToFp16HalvesTheConstants) {
  ExecOptions options;
  options.convertToFp16 = true;
  Compilation compilation = withTwoSpecializations(options);
  packConstantsPass(compilation);
  ASSERT_EQ(compilation.constants.constants.size(), 1u);
  EXPECT_EQ(compilation.constants.constants[0].tensor.dtype, ir::DType::Float16);
  const container::QpcConstant& b = compilation.constants.constants[0];
  EXPECT_EQ(b.storedSize(), 8u);
  ASSERT_NE(b.encoder, nullptr);  // converted as the container is written, not copied here
  std::array<uint16_t, 4> halves{};
  b.encoder->encode(1, 3, std::as_writable_bytes(std::span(halves).subspan(1)));
  EXPECT_EQ(halves[1], 0x4000u);  // 2.0
  EXPECT_EQ(halves[3], 0x4400u);  // 4.0
}

TEST(PackConstantsPass, Mxfp6LeavesAConstantReadByAnotherOpAsItWouldBe) {
  ExecOptions options;
  options.mxfp6Matmul = true;
  options.convertToFp16 = true;
  Compilation compilation = withTwoSpecializations(options);
  packConstantsPass(compilation);
  ASSERT_EQ(compilation.constants.constants.size(), 1u);
  const auto& packed = compilation.constants.constants[0];  // read by an elew add
  EXPECT_EQ(packed.tensor.encoding, ir::WeightEncoding::Plain);
  EXPECT_EQ(packed.tensor.dtype, ir::DType::Float16);
  EXPECT_EQ(packed.storedSize(), 8u);  // four float16 values, converted as the container is written
}

}  // namespace
}  // namespace qaic::compiler
