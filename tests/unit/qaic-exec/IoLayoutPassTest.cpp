// SPDX-License-Identifier: Apache-2.0
// io-layout: buffers at their full dims, in device format, retained ones left out.
#include <gtest/gtest.h>

#include "IoLayout.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(IoLayoutPass, BuffersTakeTheirFullDims) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2));
  compilation.fullDims = {{2000, 4}, {1, 4}, {2000, 4}, {1, 4}};
  compilation.retained.assign(4, false);
  ioLayoutPass(compilation);
  const auto& buffers = compilation.contents.buffers;
  ASSERT_EQ(buffers.size(), 4u);
  EXPECT_EQ(buffers[0].io.dims, (ir::Dims{2000, 4}));
  EXPECT_EQ(buffers[0].size, 32000u);
  EXPECT_EQ(buffers[0].deviceOffset, kFirstBufferOffset);
  EXPECT_EQ(buffers[0].deviceSize, 32768u);
  EXPECT_EQ(buffers[1].deviceOffset, kFirstBufferOffset + 32768u);
  EXPECT_EQ(compilation.ioRegionSize, kFirstBufferOffset + 2 * 32768u + 2 * 4096u);
}

TEST(IoLayoutPass, RetainedBuffersHaveNoPlace) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.variants.push_back(testing::retainedModel(2));
  compilation.fullDims = {{2, 4}, {1, 4}, {2, 4}, {1, 4}};
  compilation.retained = {false, true, false, true};
  ioLayoutPass(compilation);
  ASSERT_EQ(compilation.contents.buffers.size(), 2u);
  EXPECT_EQ(compilation.contents.buffers[0].io.bufferName, "x");
  EXPECT_EQ(compilation.contents.buffers[1].io.bufferName, "y");
  EXPECT_EQ(compilation.contents.buffers[1].index, 1u);
}

}  // namespace
}  // namespace qaic::compiler
