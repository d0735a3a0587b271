// SPDX-License-Identifier: Apache-2.0
// Import-time folding: batchnorm into conv, shape arithmetic into reshape dims.
#include <gtest/gtest.h>

#include <cmath>

#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

void addBatchNorm(ModelBuilder& b, const std::string& in, const std::string& out) {
  b.initializer("scale", {2}, {2.0f, 0.5f})
      .initializer("offset", {2}, {1.0f, -1.0f})
      .initializer("mean", {2}, {0.5f, 3.0f})
      .initializer("var", {2}, {4.0f, 0.25f});
  auto& bn = b.node("BatchNormalization", {in, "scale", "offset", "mean", "var"}, {out}, "bn");
  setAttr(bn, "epsilon", 0.0f + 1e-5f);
}

// x -> Conv (two output channels, weights 3 and -2, bias 0.25 and 1) -> BatchNormalization -> y.
ImportedModel importConvBatchNorm(const std::vector<int64_t>& inputDims, const std::vector<int64_t>& weightDims) {
  ModelBuilder b;
  b.input("x", inputDims).output("y");
  b.initializer("w", weightDims, {3.0f, -2.0f}).initializer("bias", {2}, {0.25f, 1.0f});
  b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  addBatchNorm(b, "c", "y");
  return b.import();
}

TEST(OnnxFolding, BatchNormFoldsIntoConv) {
  const ImportedModel m = importConvBatchNorm({1, 1, 3, 3}, {2, 1, 1, 1});
  EXPECT_EQ(countOps(m.graph, "batchnorm"), 0u);
  const ir::Op* conv = findOp(m.graph, "conv2d");
  ASSERT_NE(conv, nullptr);
  const ImportedTensor* w = findWeight(m, conv->findInput("weight")->name);
  const ImportedTensor* bias = findWeight(m, conv->findInput("bias")->name);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(bias, nullptr);
  const double s0 = 2.0 / std::sqrt(4.0 + 1e-5), s1 = 0.5 / std::sqrt(0.25 + 1e-5);
  const auto wf = floatsOf(*w), bf = floatsOf(*bias);
  ASSERT_EQ(wf.size(), 2u);
  EXPECT_NEAR(wf[0], 3.0 * s0, 1e-6);
  EXPECT_NEAR(wf[1], -2.0 * s1, 1e-6);
  EXPECT_NEAR(bf[0], (0.25 - 0.5) * s0 + 1.0, 1e-6);
  EXPECT_NEAR(bf[1], (1.0 - 3.0) * s1 - 1.0, 1e-6);
  // The original, unfolded weights are not carried along.
  EXPECT_EQ(m.weights.size(), 2u);
  EXPECT_EQ(m.graph.io[1].tensor, conv->outputs[0].name);
}

// A 1-D Conv (weight [O, C, K]) folds the same way; the folded weight is stored as the [O, C, 1, K]
// image weight of the conv2d the importer runs it as, and the BatchNorm's output is the reshape
// back to [N, O, L].
TEST(OnnxFolding, BatchNormFoldsIntoOneDimensionalConv) {
  const ImportedModel m = importConvBatchNorm({1, 1, 3}, {2, 1, 1});
  EXPECT_EQ(countOps(m.graph, "batchnorm"), 0u);
  const ir::Op* conv = findOp(m.graph, "conv2d");
  ASSERT_NE(conv, nullptr);
  const ImportedTensor* w = findWeight(m, conv->findInput("weight")->name);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dims, (ir::Dims{2, 1, 1, 1}));
  const double s0 = 2.0 / std::sqrt(4.0 + 1e-5);
  EXPECT_NEAR(floatsOf(*w)[0], 3.0 * s0, 1e-6);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 2, 3}));
  EXPECT_EQ(m.graph.ops.back().optype, "reshape");
  EXPECT_EQ(m.graph.io[1].tensor, m.graph.ops.back().outputs[0].name);
}

TEST(OnnxFolding, BatchNormStaysWhenConvOutputHasTwoConsumers) {
  ModelBuilder b;
  b.input("x", {1, 1, 3, 3}).output("y").output("r");
  b.initializer("w", {2, 1, 1, 1}, {3.0f, -2.0f});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  addBatchNorm(b, "c", "y");
  b.node("Relu", {"c"}, {"r"});
  const ImportedModel m = b.import();
  EXPECT_EQ(countOps(m.graph, "batchnorm"), 1u);
  EXPECT_EQ(findOp(m.graph, "batchnorm")->number("epsilon"), static_cast<double>(1e-5f));
}

TEST(OnnxFolding, BatchNormStaysWhenConvWeightsAreNotConstant) {
  ModelBuilder b;
  b.input("x", {1, 1, 3, 3}).input("w", {2, 1, 1, 1}).output("y");
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  addBatchNorm(b, "c", "y");
  EXPECT_EQ(countOps(b.import().graph, "batchnorm"), 1u);
}

TEST(OnnxFolding, ShapeArithmeticBecomesReshapeDims) {
  // The classic exporter pattern: reshape x to [batch, -1] computed from Shape(x).
  ModelBuilder b(11);
  b.input("x", {2, 3, 4}).output("y");
  b.initializerInt64("zero", {}, {0});
  auto& gather = b.node("Gather", {"s", "zero"}, {"n"});
  setAttr(gather, "axis", int64_t{0});
  b.node("Shape", {"x"}, {"s"});
  // Shape must come first: move it in front of Gather.
  b.model().mutable_graph()->mutable_node()->SwapElements(0, 1);
  auto& unsq = b.node("Unsqueeze", {"n"}, {"n1"});
  setAttr(unsq, "axes", std::vector<int64_t>{0});
  b.initializerInt64("minus1", {1}, {-1});
  auto& concat = b.node("Concat", {"n1", "minus1"}, {"shape"});
  setAttr(concat, "axis", int64_t{0});
  b.node("Reshape", {"x", "shape"}, {"y"});

  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.ops.size(), 1u);
  EXPECT_EQ(m.graph.ops[0].optype, "reshape");
  EXPECT_EQ(m.graph.ops[0].numbers("dims"), (std::vector<double>{2, 12}));
  EXPECT_TRUE(m.weights.empty());
}

TEST(OnnxFolding, ConstantAndCastFeedReshapeWithZeroDim) {
  ModelBuilder b;
  b.input("x", {2, 3, 4}).output("y");
  auto& k = b.node("Constant", {}, {"k"});
  auto* attr = k.add_attribute();
  attr->set_name("value");
  attr->set_type(::onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(3);
  for (float v : {0.0f, 4.0f, 3.0f}) attr->mutable_t()->add_float_data(v);
  auto& cast = b.node("Cast", {"k"}, {"shape"});
  setAttr(cast, "to", int64_t{::onnx::TensorProto::INT64});
  b.node("Reshape", {"x", "shape"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_EQ(countOps(m.graph, "reshape"), 1u);
  EXPECT_EQ(findOp(m.graph, "reshape")->numbers("dims"), (std::vector<double>{2, 4, 3}));
}

TEST(OnnxFolding, ConstantArithmeticIsComputed) {
  ModelBuilder b;
  b.input("x", {2}).output("y");
  b.initializer("a", {2}, {1.5f, 2.0f}).initializer("two", {}, {2.0f});
  b.node("Mul", {"a", "two"}, {"a2"});
  b.node("Add", {"x", "a2"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(floatsOf(m.weights[0]), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(countOps(m.graph, "elew"), 1u);
}

}  // namespace
}  // namespace qaic::onnx::test
