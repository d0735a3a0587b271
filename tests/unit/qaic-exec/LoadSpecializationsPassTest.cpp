// SPDX-License-Identifier: Apache-2.0
// load-specializations: the model passes run per entry, in order, with the entry's symbols; a
// failure names the entry and stops there.
#include <gtest/gtest.h>

#include "CompileError.hpp"
#include "PassTestModels.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

std::string calls;  // what the fake passes saw, in order

// Builds the two-path network for the bound symbol `rows` instead of reading a file.
void fakeLoad(const Compilation&, Variant& variant) {
  const int64_t rows = variant.onnxSymbols.at("rows");
  calls += "load " + std::to_string(variant.index) + " rows=" + std::to_string(rows) + "; ";
  variant.model = testing::twoPathModel(rows);
}

// Refuses rows=3, as a model pass refuses a network.
void refuseThree(const Compilation&, Variant& variant) {
  calls += "check " + std::to_string(variant.index) + "; ";
  if (variant.model.graph.io[0].dims[0] == 3) throw CompileError("three rows");
}

constexpr ModelPass kPasses[] = {{"fake-load", fakeLoad}, {"refuse-three", refuseThree}};

TEST(LoadSpecializationsPass, RunsTheModelPassesPerEntryInOrder) {
  calls.clear();
  ExecOptions options;
  options.model = "m.onnx";
  options.onnxSymbols = {{"rows", 9}, {"other", 1}};
  Compilation compilation(options);
  compilation.specializations = {{{"rows", 2}}, {{"rows", 5}}};
  loadSpecializationsPass(compilation, kPasses);
  EXPECT_EQ(calls, "load 0 rows=2; check 0; load 1 rows=5; check 1; ");
  ASSERT_EQ(compilation.variants.size(), 2u);
  EXPECT_EQ(compilation.variants[0].graph.io[0].dims, (ir::Dims{2, 4}));
  EXPECT_EQ(compilation.variants[1].graph.io[0].dims, (ir::Dims{5, 4}));
}

TEST(LoadSpecializationsPass, WithoutAConfigOneNetworkForTheDefinedSymbols) {
  calls.clear();
  ExecOptions options;
  options.onnxSymbols = {{"rows", 3}};
  Compilation compilation(options);
  try {
    loadSpecializationsPass(compilation, kPasses);
    ADD_FAILURE() << "accepted three rows";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "three rows");  // no entry to name
  }
  options.onnxSymbols = {{"rows", 4}};
  Compilation accepted(options);
  loadSpecializationsPass(accepted, kPasses);
  ASSERT_EQ(accepted.variants.size(), 1u);
  EXPECT_EQ(accepted.variants[0].graph.io[0].dims, (ir::Dims{4, 4}));
}

TEST(LoadSpecializationsPass, AFailureNamesTheEntryAndStopsThere) {
  calls.clear();
  ExecOptions options;
  options.model = "m.onnx";
  Compilation compilation(options);
  compilation.specializations = {{{"rows", 2}}, {{"rows", 3}, {"seq", 1}}, {{"rows", 4}}};
  try {
    loadSpecializationsPass(compilation, kPasses);
    ADD_FAILURE() << "accepted three rows";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "m.onnx: specialization 1 (rows=3, seq=1): three rows");
  }
  EXPECT_EQ(calls, "load 0 rows=2; check 0; load 1 rows=3; check 1; ");  // no entry 2
}

}  // namespace
}  // namespace qaic::compiler
