// SPDX-License-Identifier: Apache-2.0
// How each ONNX operator maps onto IR ops and params.
#include <gtest/gtest.h>

#include <cfloat>

#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

using Numbers = std::vector<double>;

TEST(OnnxOperators, MaxPoolCeilModeAddsEndPadding) {
  ModelBuilder b;
  b.input("x", {1, 1, 5, 5}).output("y");
  auto& pool = b.node("MaxPool", {"x"}, {"y"});
  setAttr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  setAttr(pool, "strides", std::vector<int64_t>{2, 2});
  setAttr(pool, "ceil_mode", int64_t{1});
  const ImportedModel m = b.import();
  const ir::Op* op = findOp(m.graph, "maxpool2d");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->numbers("padding"), (Numbers{0, 0, 1, 1}));
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 1, 3, 3}));
}

TEST(OnnxOperators, MaxPoolIndicesAndMaxUnpoolScatterOverTheFlatTensor) {
  ModelBuilder b;
  b.input("x", {1, 2, 5, 5}).initializerInt64("shape", {4}, {1, 2, 6, 5}).output("y");
  auto& pool = b.node("MaxPool", {"x"}, {"pooled", "indices"});
  setAttr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  setAttr(pool, "strides", std::vector<int64_t>{2, 2});
  setAttr(pool, "ceil_mode", int64_t{1});
  setAttr(pool, "storage_order", int64_t{1});
  auto& unpool = b.node("MaxUnpool", {"pooled", "indices", "shape"}, {"y"});
  setAttr(unpool, "kernel_shape", std::vector<int64_t>{2, 2});
  setAttr(unpool, "strides", std::vector<int64_t>{2, 2});
  const ImportedModel m = b.import();
  const ir::Op* argmax = findOp(m.graph, "pool_argmax");
  ASSERT_NE(argmax, nullptr);
  EXPECT_EQ(argmax->numbers("pads"), (Numbers{0, 0, 1, 1}));  // ceil_mode's end padding, as the values'
  EXPECT_TRUE(argmax->boolean("column_major"));
  const ir::Op* scatter = findOp(m.graph, "scatter_elements");
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(scatter->number("axis"), 0);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 2, 6, 5}));  // output_shape, not the window's 6 x 6
}

// The decomposed LayerNorm that exporters write becomes one layernorm, with ReduceMean's axes an
// attribute (opset 17) or a constant input (opset 18).
TEST(OnnxOperators, DecomposedLayerNormIsFusedAtEveryOpset) {
  for (const int64_t opset : {17, 18}) {
    SCOPED_TRACE(opset);
    ModelBuilder b(opset);
    b.input("x", {2, 5, 8}).initializer("two", {}, {2}).initializer("eps", {}, {1e-5f}).output("y");
    const auto mean = [&](const std::string& in, const std::string& out) {
      if (opset >= 18) {
        b.node("ReduceMean", {in, "axes"}, {out});
      } else {
        setAttr(b.node("ReduceMean", {in}, {out}), "axes", std::vector<int64_t>{-1});
      }
    };
    if (opset >= 18) b.initializerInt64("axes", {1}, {-1});
    mean("x", "m");
    b.node("Sub", {"x", "m"}, {"d"});
    b.node("Pow", {"d", "two"}, {"d2"});
    mean("d2", "v");
    b.node("Add", {"v", "eps"}, {"ve"});
    b.node("Sqrt", {"ve"}, {"s"});
    b.node("Div", {"d", "s"}, {"y"});
    const ImportedModel m = b.import();
    EXPECT_NE(findOp(m.graph, "layernorm"), nullptr);
    EXPECT_EQ(findOp(m.graph, "reduce"), nullptr);
  }
}

TEST(OnnxOperators, AveragePoolCountIncludePadPadsExplicitly) {
  ModelBuilder b;
  b.input("x", {1, 2, 4, 4}).output("y");
  auto& pool = b.node("AveragePool", {"x"}, {"y"});
  setAttr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
  setAttr(pool, "pads", std::vector<int64_t>{1, 1, 1, 1});
  setAttr(pool, "count_include_pad", int64_t{1});
  const ImportedModel m = b.import();
  const ir::Op* pad = findOp(m.graph, "pad");
  const ir::Op* avg = findOp(m.graph, "avgpool2d");
  ASSERT_NE(pad, nullptr);
  ASSERT_NE(avg, nullptr);
  EXPECT_EQ(pad->numbers("pads"), (Numbers{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(pad->string("mode"), "constant");
  EXPECT_EQ(avg->numbers("padding"), (Numbers{0, 0, 0, 0}));
  EXPECT_EQ(avg->inputs[0].name, pad->outputs[0].name);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 2, 4, 4}));
}

TEST(OnnxOperators, AveragePoolExcludingPadKeepsPadding) {
  ModelBuilder b;
  b.input("x", {1, 2, 4, 4}).output("y");
  auto& pool = b.node("AveragePool", {"x"}, {"y"});
  setAttr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
  setAttr(pool, "auto_pad", std::string("SAME_UPPER"));
  const ImportedModel m = b.import();
  EXPECT_EQ(countOps(m.graph, "pad"), 0u);
  EXPECT_EQ(findOp(m.graph, "avgpool2d")->numbers("padding"), (Numbers{1, 1, 1, 1}));
}

TEST(OnnxOperators, OneDimensionalPoolRunsAsImage) {
  ModelBuilder b;
  b.input("x", {1, 3, 8}).output("y");
  auto& pool = b.node("MaxPool", {"x"}, {"y"});
  setAttr(pool, "kernel_shape", std::vector<int64_t>{2});
  const ImportedModel m = b.import();
  EXPECT_EQ(findOp(m.graph, "maxpool2d")->numbers("size"), (Numbers{1, 2}));
  EXPECT_EQ(countOps(m.graph, "reshape"), 2u);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 3, 7}));
}

// Conv1d: conv2d on [N, C, 1, L] with the [O, C/group, 1, K] weight and every window value on W.
TEST(OnnxOperators, OneDimensionalConvRunsAsImage) {
  ModelBuilder b;
  b.input("x", {2, 4, 9}).output("y");
  b.initializer("w", {6, 2, 3}, std::vector<float>(36, 0.5f));
  auto& conv = b.node("Conv", {"x", "w"}, {"y"});
  setAttr(conv, "group", int64_t{2});
  setAttr(conv, "strides", std::vector<int64_t>{2});
  setAttr(conv, "pads", std::vector<int64_t>{1, 0});
  setAttr(conv, "dilations", std::vector<int64_t>{2});
  const ImportedModel m = b.import();
  const ir::Op* conv2d = findOp(m.graph, "conv2d");
  ASSERT_NE(conv2d, nullptr);
  EXPECT_EQ(conv2d->numbers("size"), (Numbers{1, 3}));
  EXPECT_EQ(conv2d->numbers("stride"), (Numbers{1, 2}));
  EXPECT_EQ(conv2d->numbers("padding"), (Numbers{0, 1, 0, 0}));
  EXPECT_EQ(conv2d->numbers("dilation"), (Numbers{1, 2}));
  EXPECT_EQ(findWeight(m, conv2d->findInput("weight")->name)->dims, (ir::Dims{6, 2, 1, 3}));
  EXPECT_EQ(countOps(m.graph, "reshape"), 2u);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{2, 6, 3}));  // (9 + 1 - 5) / 2 + 1
}

TEST(OnnxOperators, MismatchedConvRanksAreAnError) {
  ModelBuilder b;
  b.input("x", {2, 4, 9}).output("y");
  b.initializer("w", {6, 4, 1, 3}, std::vector<float>(72, 0.5f));
  b.node("Conv", {"x", "w"}, {"y"});
  try {
    b.import();
    FAIL() << "no error for a rank-3 input with a rank-4 weight";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("the weight's rank differs from the input's"), std::string::npos) << e.what();
  }
}

TEST(OnnxOperators, NaryConcatBecomesBinaryChain) {
  ModelBuilder b;
  b.input("a", {1, 2}).input("b", {1, 3}).input("c", {1, 4}).output("y");
  auto& concat = b.node("Concat", {"a", "b", "c"}, {"y"});
  setAttr(concat, "axis", int64_t{-1});
  const ImportedModel m = b.import();
  ASSERT_EQ(countOps(m.graph, "concat"), 2u);
  const ir::Op* second = findOp(m.graph, "concat", 1);
  EXPECT_EQ(second->inputs[0].name, findOp(m.graph, "concat", 0)->outputs[0].name);
  EXPECT_EQ(second->number("axis"), 1);
  EXPECT_EQ(m.graph.io[3].dims, (ir::Dims{1, 9}));
}

TEST(OnnxOperators, ElementwiseChoosesBroadcastOnlyWhenShapesDiffer) {
  ModelBuilder b;
  b.input("a", {2, 3}).input("b", {2, 3}).input("c", {3}).output("y");
  b.node("Sub", {"a", "b"}, {"d"});
  b.node("Div", {"d", "c"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_NE(findOp(m.graph, "elew"), nullptr);
  EXPECT_EQ(findOp(m.graph, "elew")->string("elew_op"), "TL_SUB");
  ASSERT_NE(findOp(m.graph, "elew_bcast"), nullptr);
  EXPECT_EQ(findOp(m.graph, "elew_bcast")->string("elew_op"), "TL_DIV");
}

TEST(OnnxOperators, ClipReadsAttributesBeforeOpset11AndInputsAfter) {
  ModelBuilder old(6);
  old.input("x", {4}).output("y");
  auto& clip = old.node("Clip", {"x"}, {"y"});
  setAttr(clip, "min", 0.0f);
  setAttr(clip, "max", 6.0f);
  const ImportedModel oldModel = old.import();
  const ir::Op* op = findOp(oldModel.graph, "clip");
  EXPECT_EQ(op->number("min"), 0.0);
  EXPECT_EQ(op->number("max"), 6.0);

  ModelBuilder now(13);
  now.input("x", {4}).output("y");
  now.initializer("lo", {}, {-1.0f});
  now.node("Clip", {"x", "lo"}, {"y"});
  const ImportedModel m = now.import();
  op = findOp(m.graph, "clip");
  EXPECT_EQ(op->number("min"), -1.0);
  EXPECT_EQ(op->number("max"), static_cast<double>(FLT_MAX));
  EXPECT_TRUE(m.weights.empty());
}

TEST(OnnxOperators, SoftmaxBeforeOpset13CoercesTo2D) {
  ModelBuilder b(11);
  b.input("x", {2, 3, 4}).output("y");
  b.node("Softmax", {"x"}, {"y"});
  const ImportedModel m = b.import();
  EXPECT_EQ(findOp(m.graph, "flatten")->number("axis"), 1);
  EXPECT_EQ(findOp(m.graph, "softmax")->number("axis"), 1);
  EXPECT_EQ(findOp(m.graph, "reshape")->numbers("dims"), (Numbers{2, 3, 4}));
}

TEST(OnnxOperators, SoftmaxFromOpset13UsesOneAxis) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4}).output("y");
  auto& softmax = b.node("Softmax", {"x"}, {"y"});
  setAttr(softmax, "axis", int64_t{1});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.ops.size(), 1u);
  EXPECT_EQ(m.graph.ops[0].number("axis"), 1);
}

TEST(OnnxOperators, GemmWithoutCGetsZeroC) {
  ModelBuilder b;
  b.input("a", {3, 2}).input("bm", {4, 3}).output("y");
  auto& gemm = b.node("Gemm", {"a", "bm"}, {"y"});
  setAttr(gemm, "transA", int64_t{1});
  setAttr(gemm, "transB", int64_t{1});
  setAttr(gemm, "alpha", 0.5f);
  const ImportedModel m = b.import();
  const ir::Op* op = findOp(m.graph, "gemm");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->boolean("trans_a"));
  EXPECT_TRUE(op->boolean("trans_b"));
  EXPECT_EQ(op->number("alpha"), 0.5);
  EXPECT_EQ(op->number("beta"), 1.0);
  EXPECT_EQ(m.graph.io[2].dims, (ir::Dims{2, 4}));
  EXPECT_FALSE(findOp(m.graph, "create")->boolean("from_file"));
}

TEST(OnnxOperators, PadReadsAttributesBeforeOpset11AndInputsAfter) {
  ModelBuilder old(2);
  old.input("x", {2, 2}).output("y");
  auto& pad = old.node("Pad", {"x"}, {"y"});
  setAttr(pad, "pads", std::vector<int64_t>{0, 1, 0, 1});
  setAttr(pad, "mode", std::string("reflect"));
  const ImportedModel a = old.import();
  EXPECT_EQ(findOp(a.graph, "pad")->string("mode"), "reflect");
  EXPECT_EQ(a.graph.io[1].dims, (ir::Dims{2, 4}));

  ModelBuilder now(13);
  now.input("x", {2, 2}).output("y");
  now.initializerInt64("pads", {4}, {1, 0, 1, 0});
  now.initializer("value", {}, {2.5f});
  now.node("Pad", {"x", "pads", "value"}, {"y"});
  const ImportedModel m = now.import();
  const ir::Op* op = findOp(m.graph, "pad");
  EXPECT_EQ(op->numbers("pads"), (Numbers{1, 0, 1, 0}));
  EXPECT_EQ(op->number("value"), 2.5);
  EXPECT_EQ(op->string("mode"), "constant");
}

TEST(OnnxOperators, FlattenAndTransposeNormalizeAxes) {
  ModelBuilder b;
  b.input("x", {2, 3, 4}).output("y");
  auto& flatten = b.node("Flatten", {"x"}, {"f"});
  setAttr(flatten, "axis", int64_t{-1});
  b.node("Transpose", {"f"}, {"y"});
  const ImportedModel m = b.import();
  EXPECT_EQ(findOp(m.graph, "flatten")->number("axis"), 2);
  EXPECT_EQ(findOp(m.graph, "transpose")->numbers("axes"), (Numbers{1, 0}));
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{4, 6}));
}

TEST(OnnxOperators, LeakyReluDefaultsAlpha) {
  ModelBuilder b;
  b.input("x", {3}).output("y");
  b.node("LeakyRelu", {"x"}, {"y"});
  const ImportedModel m = b.import();
  EXPECT_EQ(findOp(m.graph, "lrelu")->number("negslope"), static_cast<double>(0.01f));
}

// Opset 21's output_dtype names the quantized type when there is no zero point.
TEST(OnnxOperators, QuantizeLinearTakesItsTypeFromOutputDtype) {
  ModelBuilder b(21);
  b.input("x", {4}).output("y");
  b.model().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::INT8);
  b.initializer("scale", {}, {0.5f});
  setAttr(b.node("QuantizeLinear", {"x", "scale"}, {"y"}), "output_dtype", int64_t{::onnx::TensorProto::INT8});
  const ImportedModel m = b.import();
  EXPECT_EQ(m.graph.io[1].dtype, ir::DType::Int8);
  EXPECT_EQ(findOp(m.graph, "clip")->number("min"), -128.0);
}

TEST(OnnxOperators, DropoutMaskIsConstantTrue) {
  ModelBuilder b(13);
  b.input("x", {2, 2}).output("y").output("mask");
  b.model().mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::BOOL);
  b.node("Dropout", {"x"}, {"y", "mask"});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(m.weights[0].dtype, ir::DType::Bool);
  EXPECT_EQ(m.weights[0].data, std::vector<std::byte>(4, std::byte{1}));
  EXPECT_EQ(m.graph.io[2].dtype, ir::DType::Bool);
}

}  // namespace
}  // namespace qaic::onnx::test
