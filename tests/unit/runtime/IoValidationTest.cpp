// SPDX-License-Identifier: Apache-2.0
// The one buffer check of seed 000's buffer types (regular, partial, specialized, selective IO).
#include <gtest/gtest.h>

#include <qaic/IoValidation.hpp>

namespace qaic::rt {
namespace {

BufferShapeRules regular(std::string name, IoDims dims, std::size_t elementSize = 4, bool input = true) {
  BufferShapeRules r;
  r.name = std::move(name);
  r.dims = std::move(dims);
  r.elementSize = elementSize;
  r.isInput = input;
  return r;
}

BufferShapeRules partial(std::string name, IoDims dims, bool input = true) {
  BufferShapeRules r = regular(std::move(name), std::move(dims), 4, input);
  r.isPartialAllowed = true;
  return r;
}

IoSetEntry entry(std::size_t bytes, std::optional<IoDims> dims = std::nullopt) {
  IoSetEntry e;
  e.bytes = bytes;
  e.dims = std::move(dims);
  return e;
}

QStatus statusOf(const BufferShapeRules& rules, const IoSetEntry& e, std::string* message = nullptr) {
  try {
    validateBuffer(rules, e);
  } catch (const Error& error) {
    if (message) *message = error.what();
    return error.status();
  }
  return QS_SUCCESS;
}

TEST(IoValidation, RegularBufferAcceptsExactDimsAndDefaultsToThem) {
  const auto rules = regular("in0", {2, 3});
  EXPECT_EQ(validateBuffer(rules, entry(24)), (IoDims{2, 3}));
  EXPECT_EQ(validateBuffer(rules, entry(24, IoDims{2, 3})), (IoDims{2, 3}));
}

TEST(IoValidation, RegularBufferRefusesOtherDimsNamingTheBuffer) {
  std::string message;
  EXPECT_EQ(statusOf(regular("in0", {2, 3}), entry(24, IoDims{3, 2}), &message), QS_BUFFER_DIMS);
  EXPECT_NE(message.find("'in0'"), std::string::npos) << message;
  EXPECT_NE(message.find("[3,2]"), std::string::npos) << message;
}

TEST(IoValidation, InputSizeMustMatchExactlyOutputMayBeLarger) {
  std::string message;
  EXPECT_EQ(statusOf(regular("in0", {8}), entry(31), &message), QS_BUFFER_SIZE);
  EXPECT_NE(message.find("31 bytes"), std::string::npos) << message;
  EXPECT_EQ(statusOf(regular("in0", {8}), entry(36)), QS_BUFFER_SIZE);
  EXPECT_EQ(statusOf(regular("out", {8}, 4, false), entry(64)), QS_SUCCESS);
  EXPECT_EQ(statusOf(regular("out", {8}, 4, false), entry(28)), QS_BUFFER_SIZE);
}

TEST(IoValidation, PartialBufferAcceptsAnyProductUpToTheFullOne) {
  const auto rules = partial("out0", {64}, false);
  EXPECT_EQ(validateBuffer(rules, entry(240, IoDims{60})), (IoDims{60}));
  EXPECT_EQ(validateBuffer(rules, entry(0, IoDims{0})), (IoDims{0}));
  EXPECT_EQ(validateBuffer(rules, entry(256, IoDims{8, 8})), (IoDims{8, 8}));
  EXPECT_EQ(statusOf(rules, entry(260, IoDims{65})), QS_BUFFER_DIMS);
}

TEST(IoValidation, DimsNeedOneToEightEntries) {
  const auto rules = partial("in0", {64});
  EXPECT_EQ(statusOf(rules, entry(0, IoDims{})), QS_BUFFER_DIMS);
  EXPECT_EQ(statusOf(rules, entry(4, IoDims(9, 1))), QS_BUFFER_DIMS);
  EXPECT_EQ(statusOf(rules, entry(4, IoDims{1u << 31, 1u << 31, 1u << 31})), QS_BUFFER_DIMS);
}

std::vector<BufferShapeRules> specializedNetwork() {
  // Seed 000's specialized example.
  auto in0 = partial("in0", {1, 32});
  in0.allowedShapes = {{1, 32}, {1, 1}};
  auto in1 = regular("in1", {1, 128});
  in1.allowedShapes = {{1, 128}, {1, 2}};
  auto out0 = partial("out0", {1, 64}, false);
  out0.allowedShapes = {{1, 64}, {1, 3}};
  auto out1 = regular("out1", {1, 32}, 4, false);
  out1.allowedShapes = {{1, 32}, {1, 4}};
  return {in0, in1, out0, out1};
}

TEST(IoValidation, SpecializedSetMatchesOneCombination) {
  const auto rules = specializedNetwork();
  auto shape = validateIoSet(
      rules, {entry(4, IoDims{1, 1}), entry(8, IoDims{1, 2}), entry(12, IoDims{1, 3}), entry(16, IoDims{1, 4})});
  EXPECT_EQ(shape.specialization, 1);
  EXPECT_EQ(shape.dims[2], (IoDims{1, 3}));
  shape = validateIoSet(rules, {entry(128, IoDims{1, 32}), entry(512), entry(256), entry(128)});
  EXPECT_EQ(shape.specialization, 0);
  // Outputs that give no dims take those of the combination the inputs select.
  shape = validateIoSet(rules, {entry(4, IoDims{1, 1}), entry(8, IoDims{1, 2}), entry(256), entry(128)});
  EXPECT_EQ(shape.specialization, 1);
  EXPECT_EQ(shape.dims[2], (IoDims{1, 3}));
  EXPECT_EQ(shape.dims[3], (IoDims{1, 4}));
}

TEST(IoValidation, SpecializedBufferOutsideTheAllowedShapesIsRefused) {
  std::string message;
  EXPECT_EQ(statusOf(specializedNetwork()[0], entry(8, IoDims{1, 2}), &message), QS_BUFFER_DIMS);
  EXPECT_NE(message.find("allowed shapes"), std::string::npos) << message;
}

TEST(IoValidation, SpecializedSetMixingCombinationsIsRefused) {
  try {
    validateIoSet(specializedNetwork(), {entry(128, IoDims{1, 32}), entry(8, IoDims{1, 2}), entry(12, IoDims{1, 3}),
                                         entry(16, IoDims{1, 4})});
    FAIL() << "mixed combinations accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_BUFFER_DIMS);
    EXPECT_NE(std::string(e.what()).find("in0=[1,32]"), std::string::npos) << e.what();
  }
}

TEST(IoValidation, SelectiveIoDropNeedsAllThreeFlags) {
  IoSetEntry dropped;
  dropped.present = false;
  auto rules = partial("in0", {32});
  EXPECT_EQ(statusOf(rules, dropped), QS_INVAL);
  rules.skipPartialHeader = true;
  EXPECT_EQ(statusOf(rules, dropped), QS_INVAL);
  rules.allowSkip = true;
  EXPECT_EQ(statusOf(rules, dropped), QS_SUCCESS);
  EXPECT_TRUE(validateBuffer(rules, dropped).empty());
  rules.isPartialAllowed = false;
  EXPECT_EQ(statusOf(rules, dropped), QS_INVAL);
}

TEST(IoValidation, SetWithTheWrongNumberOfBuffersIsRefused) {
  EXPECT_THROW(validateIoSet({regular("a", {1})}, {}), Error);
}

TEST(IoValidation, RulesFromBufferMappingV2) {
  v2::BufferMapping mapping;
  mapping.bufferName = "in0";
  mapping.ioType = BUFFER_IO_TYPE_INPUT;
  mapping.size = 1 * 3 * 8 * 8 * 2;  // float16 elements
  mapping.isPartialBufferAllowed = true;
  mapping.allowSkip = true;
  mapping.ioShapes.defaultDims = {1, 3, 8, 8};
  mapping.ioShapes.allowedDims = {{1, 3, 8, 8}};
  auto rules = shapeRules(mapping);
  EXPECT_EQ(rules.elementSize, 2u);
  EXPECT_TRUE(rules.isInput);
  EXPECT_TRUE(rules.allowedShapes.empty()) << "only the default combination: not specialized";
  EXPECT_TRUE(rules.allowSkip);
  mapping.ioShapes.allowedDims.push_back({1, 3, 4, 4});
  rules = shapeRules(mapping);
  ASSERT_EQ(rules.allowedShapes.size(), 2u);
  EXPECT_EQ(rules.allowedShapes[1], (IoDims{1, 3, 4, 4}));
}

}  // namespace
}  // namespace qaic::rt
