// SPDX-License-Identifier: Apache-2.0
// exchangeable-io: a buffer type the runtime cannot convert is refused at compile time.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(ExchangeableIoPass, RefusesADoubleOutput) {
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  variant.model.graph.io[3].dtype = ir::DType::Double;
  const ExecOptions options;
  try {
    exchangeableIoPass(Compilation(options), variant);
    ADD_FAILURE() << "accepted a double output";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    const std::string expected = "net.json: output 'w' is TL_DOUBLE, which the runtime";
    EXPECT_EQ(message.rfind(expected, 0), 0u) << message;
  }
}

TEST(ExchangeableIoPass, AcceptsFloatBuffers) {
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  const ExecOptions options;
  EXPECT_NO_THROW(exchangeableIoPass(Compilation(options), variant));
}

}  // namespace
}  // namespace qaic::compiler
