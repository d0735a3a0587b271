// SPDX-License-Identifier: Apache-2.0
// network-checks: host-only operators and a missing io section are refused, naming the file.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "Paths.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

std::string refusal(const std::string& dataFile) {
  const auto path = qaic::testing::sourceDir() / "tests/support/models" / dataFile;
  Variant variant = testing::variantOf(ir::loadGraph(path.string()));
  const ExecOptions options;
  try {
    networkChecksPass(Compilation(options), variant);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(NetworkChecksPass, RefusesHostOnlyOps) {
  const std::string message = refusal("has_print.json");
  const std::string expected = "has_print.json: op 'show': optype 'print' is host-only";
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

TEST(NetworkChecksPass, RefusesANetworkWithoutIo) {
  const std::string message = refusal("no_io.json");
  const std::string expected = "no_io.json: the network has no \"io\" section";
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

TEST(NetworkChecksPass, AcceptsADeviceNetwork) {
  Variant variant = testing::variantOf(testing::inferredGraph(testing::twoPathJson(2)));
  const ExecOptions options;
  EXPECT_NO_THROW(networkChecksPass(Compilation(options), variant));
}

}  // namespace
}  // namespace qaic::compiler
