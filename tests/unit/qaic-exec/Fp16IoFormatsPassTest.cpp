// SPDX-License-Identifier: Apache-2.0
// fp16-io-formats: -convert-to-fp16 gives float buffers their FP16 device formats.
#include <gtest/gtest.h>

#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(Fp16IoFormatsPass, FloatInputsBecomeFp16OnTheDevice) {
  ExecOptions options;
  options.convertToFp16 = true;
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  fp16IoFormatsPass(Compilation(options), variant);
  const ir::IoBuffer& x = variant.model.graph.io[0];
  EXPECT_EQ(x.dtype, ir::DType::Float);  // the user's type stays
  EXPECT_EQ(x.deviceFormat.elementType, ir::DType::Float16);
}

TEST(Fp16IoFormatsPass, WithoutTheOptionOrWithTheFlatLayoutBuffersStayFloat) {
  ExecOptions flat;
  flat.convertToFp16 = true;
  flat.fp16IoLayout = Fp16IoLayout::Flat;
  for (const ExecOptions& options : {ExecOptions{}, flat}) {
    Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
    fp16IoFormatsPass(Compilation(options), variant);
    for (const ir::IoBuffer& io : variant.model.graph.io) {
      EXPECT_EQ(io.deviceFormat.layout, ir::DeviceLayout::Flat) << io.bufferName;
      EXPECT_EQ(io.deviceFormat.elementType, ir::DType::Float) << io.bufferName;
    }
  }
}

}  // namespace
}  // namespace qaic::compiler
