// SPDX-License-Identifier: Apache-2.0
// specialization-io: a later specialization has specialization 0's buffers, differing in dims
// only (load-specializations puts the entry in front of the message).
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

std::string check(Variant variant) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2));
  try {
    specializationIoPass(compilation, variant);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SpecializationIoPass, OtherDimsAreAccepted) {
  EXPECT_EQ(check(testing::variantOf(testing::inferredGraph(testing::twoPathJson(7)))), "accepted");
}

TEST(SpecializationIoPass, AnotherBufferCountIsRefused) {
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  variant.model.graph.io.pop_back();
  EXPECT_EQ(check(std::move(variant)), "has 3 io buffers, specialization 0 has 4");
}

TEST(SpecializationIoPass, AnotherDtypeIsRefused) {
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  variant.model.graph.io[2].dtype = ir::DType::Float16;
  EXPECT_EQ(check(std::move(variant)),
            "buffer 'y' differs from specialization 0's 'y' in name, direction, dtype, rank or "
            "device format");
}

TEST(SpecializationIoPass, SpecializationZeroIsTheReference) {
  const ExecOptions options;
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  variant.model.graph.io.pop_back();
  EXPECT_NO_THROW(specializationIoPass(Compilation(options), variant));
}

}  // namespace
}  // namespace qaic::compiler
