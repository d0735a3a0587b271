// SPDX-License-Identifier: Apache-2.0
// qaic-exec -network-specialization-config: the vendor's file format, and every bad file named
// with its field.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "SpecializationConfig.hpp"
#include "TempDir.hpp"

namespace qaic::compiler {
namespace {

TEST(SpecializationConfig, ReadsTheVendorFormat) {
  const auto entries = parseSpecializationConfig(
      R"({"specializations": [{"batch_size": "1", "seq_len": "32", "ctx_len": "128"},
                              {"batch_size": "1", "seq_len": 1, "ctx_len": "128"}]})",
      "spec.json");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], (Specialization{{"batch_size", 1}, {"seq_len", 32}, {"ctx_len", 128}}));
  EXPECT_EQ(entries[1].at("seq_len"), 1);
  EXPECT_EQ(describeSpecialization(entries[1]), "batch_size=1, ctx_len=128, seq_len=1");
}

// Each bad file fails with a message naming the file and the field.
TEST(SpecializationConfig, BadFilesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "spec.json: json"},
      {"[]", "spec.json: (top level)"},
      {R"({})", "spec.json: specializations: missing"},
      {R"({"specializations": []})", "spec.json: specializations: expected a non-empty array"},
      {R"({"specializations": [{"seq_len": "1"}], "extra": 1})", "spec.json: extra: unknown key"},
      {R"({"specializations": [3]})", "spec.json: specializations[0]: expected a non-empty object"},
      {R"({"specializations": [{"seq_len": "x1"}]})", "spec.json: specializations[0].seq_len: 'x1' is not"},
      {R"({"specializations": [{"seq_len": "1"}, {"seq_len": "0"}]})", "spec.json: specializations[1].seq_len: 0"},
      {R"({"specializations": [{"seq_len": -4}]})", "spec.json: specializations[0].seq_len: -4"},
      {R"({"specializations": [{"seq_len": 1.5}]})", "spec.json: specializations[0].seq_len: expected"},
      {R"({"specializations": [{"seq_len": "1"}, {"seq_len": 1}]})", "spec.json: specializations[1]: repeats"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parseSpecializationConfig(text, "spec.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << text << " -> " << e.what();
    }
  }
}

TEST(SpecializationConfig, AMissingFileIsNamed) {
  qaic::testing::TempDir dir("qaic-spec-config");
  const std::string path = (dir.path() / "absent.json").string();
  try {
    loadSpecializationConfig(path);
    ADD_FAILURE() << "read a missing file";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qaic::compiler
