// SPDX-License-Identifier: Apache-2.0
// ONNX backend node tests (python3-onnx 1.12's generated cases) for every operator the importer
// claims, imported and run on the host executor. Generated into the build tree on first use.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "GeneratedData.hpp"
#include "NodeTestCase.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::conformance {
namespace {

// Cases the stack cannot run, with the reason; docs/conformance.md lists the same. An excluded
// case that starts passing fails the suite, so this list only shrinks.
const std::map<std::string, std::string>& exclusions() {
  static const std::map<std::string, std::string> excluded = {
      {"test_batchnorm_epsilon_training_mode", "training-mode BatchNormalization (inference only)"},
      {"test_batchnorm_example_training_mode", "training-mode BatchNormalization (inference only)"},
      {"test_training_dropout", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_default", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_default_mask", "training-mode Dropout is random (inference only)"},
      {"test_training_dropout_mask", "training-mode Dropout is random (inference only)"},
      {"test_reshape_allowzero_reordered", "produces an empty (zero-element) tensor; IR dims are >= 1"},
      {"test_constantofshape_int_shape_zero", "produces an empty (zero-element) tensor; IR dims are >= 1"},
      {"test_slice_start_out_of_bounds", "produces an empty (zero-element) tensor; IR dims are >= 1"},
      {"test_split_zero_size_splits", "an empty (zero-element) input; IR dims are >= 1"},
      {"test_maxunpool_export_with_output_shape",
       "MaxUnpool's output_shape given at run time; IR shapes are static (a constant output_shape is taken)"},
      {"test_tril_zero", "an empty (zero-element) input; IR dims are >= 1"},
      {"test_triu_zero", "an empty (zero-element) input; IR dims are >= 1"},
      {"test_upsample_nearest",
       "Upsample's scales given at run time; IR shapes are static (constant scales are taken)"},
      {"test_stft", "STFT's frame_step given at run time; IR shapes are static (a constant frame_step is taken)"},
      {"test_stft_with_window", "STFT's frame_step given at run time; IR shapes are static"},
      {"test_blackmanwindow", "the window size given at run time; IR shapes are static (a constant size is taken)"},
      {"test_blackmanwindow_expanded", "the window size given at run time; IR shapes are static"},
      {"test_blackmanwindow_symmetric", "the window size given at run time; IR shapes are static"},
      {"test_blackmanwindow_symmetric_expanded", "the window size given at run time; IR shapes are static"},
      {"test_hammingwindow", "the window size given at run time; IR shapes are static"},
      {"test_hammingwindow_expanded", "the window size given at run time; IR shapes are static"},
      {"test_hammingwindow_symmetric", "the window size given at run time; IR shapes are static"},
      {"test_hammingwindow_symmetric_expanded", "the window size given at run time; IR shapes are static"},
      {"test_hannwindow", "the window size given at run time; IR shapes are static"},
      {"test_hannwindow_expanded", "the window size given at run time; IR shapes are static"},
      {"test_hannwindow_symmetric", "the window size given at run time; IR shapes are static"},
      {"test_hannwindow_symmetric_expanded", "the window size given at run time; IR shapes are static"},
      {"test_resize_tf_crop_and_resize", "Resize's tf_crop_and_resize (a region of interest) is not supported"},
      {"test_if", "an If whose condition is known only at run time (conditions on static shapes are taken)"},
      {"test_lstm_with_peepholes", "sequence_lens given at run time (packed sequences) is not supported"},
      {"test_cast_BFLOAT16_to_FLOAT", "bfloat16 is not an IR element type"},
      {"test_cast_FLOAT_to_BFLOAT16", "bfloat16 is not an IR element type"},
      {"test_cast_FLOAT_to_STRING", "strings are not an IR element type"},
      {"test_cast_STRING_to_FLOAT", "strings are not an IR element type"},
      {"test_castlike_BFLOAT16_to_FLOAT", "bfloat16 is not an IR element type"},
      {"test_castlike_FLOAT_to_BFLOAT16", "bfloat16 is not an IR element type"},
      {"test_castlike_FLOAT_to_STRING", "strings are not an IR element type"},
      {"test_castlike_STRING_to_FLOAT", "strings are not an IR element type"},
      {"test_castlike_BFLOAT16_to_FLOAT_expanded", "bfloat16 is not an IR element type"},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded", "bfloat16 is not an IR element type"},
      {"test_castlike_FLOAT_to_STRING_expanded", "strings are not an IR element type"},
      {"test_castlike_STRING_to_FLOAT_expanded", "strings are not an IR element type"},
  };
  return excluded;
}

std::string nodeTestDir() { return buildDir() + "/tests/conformance/onnx-node"; }

// The index file is named after the claimed operators, so a change of the table regenerates.
std::string indexName(const std::vector<std::string>& operators) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const auto& op : operators) {
    for (unsigned char ch : op + ",") hash = (hash ^ ch) * 0x100000001b3ull;
  }
  char name[32];
  std::snprintf(name, sizeof name, "index-%016llx.txt", static_cast<unsigned long long>(hash));
  return name;
}

struct GeneratedCase {
  std::string name;
  std::string op;
};

const std::vector<GeneratedCase>& generatedCases() {
  static const std::vector<GeneratedCase> cases = [] {
    const auto operators = onnx::supportedOperators();
    const std::string index = indexName(operators);
    std::vector<std::string> args = {"--index", index, "--operators"};
    args.insert(args.end(), operators.begin(), operators.end());
    ensureGenerated("gen-onnx-node-tests.py", nodeTestDir(), index, std::chrono::seconds(400), args);
    std::ifstream in(nodeTestDir() + "/" + index);
    std::vector<GeneratedCase> all;
    for (std::string name, op; in >> name >> op;) all.push_back({name, op});
    return all;
  }();
  return cases;
}

class OnnxNodeTests : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTests, PassOnHostExecutor) {
  const std::string& op = GetParam();
  int passed = 0, excluded = 0;
  for (const auto& [name, caseOp] : generatedCases()) {
    if (caseOp != op) continue;
    const std::string dir = nodeTestDir() + "/" + name;
    const NodeTestResult result = runNodeTest(dir);
    const auto exclusion = exclusions().find(name);
    if (exclusion != exclusions().end()) {
      ++excluded;
      EXPECT_FALSE(result.passed) << name << " passes now; remove it from the exclusion list (" << exclusion->second
                                  << ")";
      continue;
    }
    EXPECT_TRUE(result.passed) << name << ": " << result.message;
    passed += result.passed;
  }
  EXPECT_GT(passed + excluded, 0) << "no generated node test exercises " << op;
  std::cout << "conformance: " << op << " passed " << passed << ", excluded " << excluded << "\n";
  RecordProperty("passed", passed);
  RecordProperty("excluded", excluded);
}

// One test per claimed operator, straight from the importer's table.
INSTANTIATE_TEST_SUITE_P(Operators, OnnxNodeTests, ::testing::ValuesIn(onnx::supportedOperators()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace qaic::conformance
