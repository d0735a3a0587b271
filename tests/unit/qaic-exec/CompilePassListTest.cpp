// SPDX-License-Identifier: Apache-2.0
// compile()'s pass tables: the passes run in this order (error precedence depends on it).
#include <gtest/gtest.h>

#include "Compilation.hpp"

namespace qaic::compiler {
namespace {

// The names, space-separated; every pass has a function.
template <typename Pass>
std::string namesOf(std::span<const Pass> passes) {
  std::string names;
  for (const Pass& pass : passes) {
    EXPECT_NE(pass.run, nullptr) << pass.name;
    names += (names.empty() ? "" : " ") + std::string(pass.name);
  }
  return names;
}

TEST(CompilePassList, ModelPassesInOrder) {
  EXPECT_EQ(namesOf(modelPasses()),
            "load-model network-checks batch-size infer-shapes custom-io fp16-io-formats "
            "exchangeable-io specialization-io");
}

TEST(CompilePassList, CompilePassesInOrder) {
  EXPECT_EQ(namesOf(compilePasses()),
            "partition-config specialization-config custom-io-list load-specializations "
            "default-specialization retained-state cast-placement tensor-slicing pipeline-stages pack-constants "
            "io-layout specialization-payloads constant-table "
            "program device-parts "
            "write-container dump-partition-config");
}

// A device's part goes through the same passes as part 0 (the compilation itself) after the
// split, in the same order.
TEST(CompilePassList, PartPassesInOrder) {
  EXPECT_EQ(namesOf(partShapePasses()), "default-specialization retained-state");
  EXPECT_EQ(namesOf(partContainerPasses()), "pack-constants io-layout specialization-payloads constant-table program");
}

}  // namespace
}  // namespace qaic::compiler
