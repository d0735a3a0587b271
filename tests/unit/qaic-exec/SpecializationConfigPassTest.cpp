// SPDX-License-Identifier: Apache-2.0
// specialization-config: the config's entries for an ONNX model; a JSON IR refuses the option.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileError.hpp"
#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

TEST(SpecializationConfigPass, ReadsTheEntriesForAnOnnxModel) {
  qaic::testing::TempDir dir("qaic-specialization-config-pass");
  ExecOptions options;
  options.model = "decoder.onnx";
  options.specializationConfig = (dir.path() / "spec.json").string();
  const char* config = R"({"specializations": [{"seq_len": "4"}, {"seq_len": 1}]})";
  std::ofstream(options.specializationConfig) << config;
  Compilation compilation(options);
  specializationConfigPass(compilation);
  ASSERT_EQ(compilation.specializations.size(), 2u);
  EXPECT_EQ(compilation.specializations[0], (Specialization{{"seq_len", 4}}));
  EXPECT_EQ(compilation.specializations[1], (Specialization{{"seq_len", 1}}));
}

TEST(SpecializationConfigPass, AJsonIrRefusesTheOption) {
  ExecOptions options;
  options.model = "net.json";
  options.specializationConfig = "spec.json";  // not read
  Compilation compilation(options);
  try {
    specializationConfigPass(compilation);
    ADD_FAILURE() << "accepted a JSON IR";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "net.json: -network-specialization-config binds ONNX symbolic dims; a JSON IR "
              "declares its combinations in \"allowed_shapes\"");
  }
}

TEST(SpecializationConfigPass, WithoutAConfigThereAreNoSpecializations) {
  ExecOptions options;
  options.model = "net.json";
  Compilation compilation(options);
  specializationConfigPass(compilation);
  EXPECT_TRUE(compilation.specializations.empty());
}

}  // namespace
}  // namespace qaic::compiler
