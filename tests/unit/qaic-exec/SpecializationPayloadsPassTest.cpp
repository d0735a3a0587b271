// SPDX-License-Identifier: Apache-2.0
// specialization-payloads: one payload per distinct shape combination; constants shared when
// equal, renamed when another specialization folded them differently.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

// Specializations of rows 2 and 4 (the default, with the larger dims), their biases as given.
using Bias = std::vector<float>;

Compilation specialized(const ExecOptions& options, Bias smallBias, Bias defaultBias) {
  Compilation compilation(options);
  compilation.specializations = {{{"rows", 2}}, {{"rows", 4}}};
  compilation.variants.push_back(testing::twoPathModel(2, std::move(smallBias)));
  compilation.variants.push_back(testing::twoPathModel(4, std::move(defaultBias)));
  compilation.mainVariant = 1;
  compilation.fullDims = {{4, 4}, {1, 4}, {4, 4}, {1, 4}};
  compilation.retained.assign(4, false);
  packConstantsPass(compilation);
  return compilation;
}

TEST(SpecializationPayloadsPass, EqualConstantsAreShared) {
  const ExecOptions options;
  Compilation compilation = specialized(options, {1, 2, 3, 4}, {1, 2, 3, 4});
  specializationPayloadsPass(compilation);
  constantTablePass(compilation);
  ASSERT_EQ(compilation.payloads.size(), 2u);
  EXPECT_EQ(compilation.payloads[0].variant, 1u);
  EXPECT_EQ(compilation.payloads[1].variant, 0u);
  ASSERT_EQ(compilation.contents.allowedShapes.size(), 1u);
  EXPECT_EQ(compilation.contents.allowedShapes[0][0], (ir::Dims{2, 4}));
  EXPECT_EQ(compilation.payloads[0].combination, 0u);
  EXPECT_EQ(compilation.payloads[1].combination, 1u);
  ASSERT_EQ(compilation.extraConstants.size(), 1u);
  EXPECT_TRUE(compilation.extraConstants[0].constants[0].tensor.name.empty());  // shared
  EXPECT_EQ(compilation.summary.constantBytes, 16u);
  EXPECT_EQ(ir::parseGraph(compilation.payloads[1].json).io[0].dims, (ir::Dims{2, 4}));
}

TEST(SpecializationPayloadsPass, DifferentConstantsOfOneNameAreRenamed) {
  const ExecOptions options;
  Compilation compilation = specialized(options, {5, 6, 7, 8}, {1, 2, 3, 4});
  specializationPayloadsPass(compilation);
  constantTablePass(compilation);
  ASSERT_EQ(compilation.extraConstants.size(), 1u);
  EXPECT_EQ(compilation.extraConstants[0].constants[0].tensor.name, "b@specialization0");
  EXPECT_EQ(compilation.summary.constantBytes, 32u);
  EXPECT_NE(compilation.payloads[1].json.find("b@specialization0"), std::string::npos);
  EXPECT_EQ(compilation.payloads[0].json.find("@specialization"), std::string::npos);
}

TEST(SpecializationPayloadsPass, TwoEntriesOfTheSameDimsAreRefused) {
  ExecOptions options;
  options.model = "m.onnx";
  Compilation compilation = specialized(options, {1, 2, 3, 4}, {1, 2, 3, 4});
  compilation.specializations.push_back({{"rows", 2}, {"unused", 1}});
  compilation.variants.push_back(testing::twoPathModel(2));
  try {
    specializationPayloadsPass(compilation);
    ADD_FAILURE() << "accepted two entries of one combination";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.onnx: specializations 2 and another give the same buffer dims; each entry must "
              "select a "
              "distinct shape combination");
  }
}

TEST(SpecializationPayloadsPass, WithoutSpecializationsOnlyTheProgramsPayload) {
  const ExecOptions options;
  Compilation compilation(options);
  compilation.variants.push_back(testing::twoPathModel(2));
  compilation.fullDims = {{2, 4}, {1, 4}, {2, 4}, {1, 4}};
  compilation.retained.assign(4, false);
  specializationPayloadsPass(compilation);
  ASSERT_EQ(compilation.payloads.size(), 1u);
  EXPECT_TRUE(compilation.contents.allowedShapes.empty());
  const ir::Graph payload = ir::parseGraph(compilation.payloads[0].json);
  EXPECT_TRUE(payload.weightsFile.empty());  // constants come from the container
  EXPECT_EQ(payload.ops.size(), 3u);
}

}  // namespace
}  // namespace qaic::compiler
