// SPDX-License-Identifier: Apache-2.0
// Structure of an imported model: io section, weights, create ops, removed operators.
#include <gtest/gtest.h>

#include "IrGraphs.hpp"
#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

TEST(OnnxImport, ConvReluBecomesIrWithIoAndWeights) {
  ModelBuilder b;
  b.input("x", {1, 2, 5, 5}).output("y");
  b.initializer("w", {3, 2, 3, 3}, std::vector<float>(54, 0.5f)).initializer("bias", {3}, {1, 2, 3});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv1");
  setAttr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu1");

  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.io.size(), 2u);
  EXPECT_EQ(m.graph.io[0].bufferName, "x");
  EXPECT_EQ(m.graph.io[0].direction, ir::Direction::In);
  EXPECT_EQ(m.graph.io[0].dims, (ir::Dims{1, 2, 5, 5}));
  EXPECT_EQ(m.graph.io[1].bufferName, "y");
  EXPECT_EQ(m.graph.io[1].direction, ir::Direction::Out);
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{1, 3, 5, 5}));

  const ir::Op* conv2d = findOp(m.graph, "conv2d");
  ASSERT_NE(conv2d, nullptr);
  EXPECT_EQ(conv2d->numbers("padding"), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(conv2d->numbers("size"), (std::vector<double>{3, 3}));
  EXPECT_EQ(conv2d->string("autopad"), "NOTSET");
  EXPECT_EQ(countOps(m.graph, "create"), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(findOp(m.graph, "create", i)->boolean("from_file"));
  ASSERT_EQ(m.weights.size(), 2u);
  const ImportedTensor* w = findWeight(m, conv2d->findInput("weight")->name);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dims, (ir::Dims{3, 2, 3, 3}));
  EXPECT_EQ(w->data.size(), 54 * sizeof(float));

  const auto views = weightTensors(m);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].data.data(), m.weights[0].data.data());

  // The importer's graph is valid IR: it survives the JSON round trip and shape inference.
  ir::Graph reparsed = ir::parseGraph(ir::toJson(m.graph), "roundtrip");
  EXPECT_NO_THROW(ir::inferShapes(reparsed));
}

TEST(OnnxImport, ConvWithoutBiasGetsZeroBias) {
  ModelBuilder b;
  b.input("x", {1, 1, 4, 4}).output("y");
  b.initializer("w", {2, 1, 1, 1}, {1, 2});
  b.node("Conv", {"x", "w"}, {"y"});
  const ImportedModel m = b.import();
  const ir::Op* conv2d = findOp(m.graph, "conv2d");
  ASSERT_NE(conv2d, nullptr);
  const std::string bias = conv2d->findInput("bias")->name;
  const ir::Op* biasOp = nullptr;
  for (const auto& op : m.graph.ops) {
    if (op.outputs.size() == 1 && op.outputs[0].name == bias) biasOp = &op;
  }
  ASSERT_NE(biasOp, nullptr);
  EXPECT_EQ(biasOp->optype, "create");
  EXPECT_FALSE(biasOp->boolean("from_file"));
  EXPECT_EQ(biasOp->numbers("dims"), (std::vector<double>{2}));
  EXPECT_EQ(findWeight(m, bias), nullptr);
}

TEST(OnnxImport, IdentityAndDropoutAreRemoved) {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y");
  b.node("Identity", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"r"});
  b.node("Dropout", {"r"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.ops.size(), 1u);
  EXPECT_EQ(m.graph.ops[0].optype, "relu");
  EXPECT_EQ(m.graph.ops[0].inputs[0].name, "x");
  EXPECT_EQ(m.graph.io[1].tensor, m.graph.ops[0].outputs[0].name);
}

TEST(OnnxImport, OutputThatIsAnInputGetsItsOwnTensor) {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y");
  b.node("Identity", {"x"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.ops.size(), 1u);
  EXPECT_EQ(m.graph.ops[0].optype, "reshape");
  EXPECT_NE(m.graph.io[1].tensor, "x");
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{2, 3}));
}

TEST(OnnxImport, UnusedInitializersAreDropped) {
  ModelBuilder b;
  b.input("x", {4}).output("y");
  b.initializer("unused", {2}, {1, 2});
  b.node("Relu", {"x"}, {"y"});
  const ImportedModel m = b.import();
  EXPECT_TRUE(m.weights.empty());
  EXPECT_EQ(m.graph.io.size(), 2u);
}

TEST(OnnxImport, InitializerListedAsGraphInputIsNotAnIoBuffer) {
  ModelBuilder b;
  b.input("x", {2}).input("k", {2}).output("y");
  b.initializer("k", {2}, {3, 4});
  b.node("Add", {"x", "k"}, {"y"});
  const ImportedModel m = b.import();
  ASSERT_EQ(m.graph.io.size(), 2u);
  EXPECT_EQ(m.graph.io[0].bufferName, "x");
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(floatsOf(m.weights[0]), (std::vector<float>{3, 4}));
}

TEST(OnnxImport, SymbolicDimsResolveFromSymbolsOrBatchSize) {
  ModelBuilder b;
  b.input("x", {0, 3, 0}, {"batch", "len"}).output("y");
  b.node("Relu", {"x"}, {"y"});

  ImportOptions symbols;
  symbols.symbols = {{"batch", 2}, {"len", 7}};
  EXPECT_EQ(b.import(symbols).graph.io[1].dims, (ir::Dims{2, 3, 7}));

  ImportOptions batch;
  batch.batchSize = 4;
  batch.symbols = {{"len", 5}};
  EXPECT_EQ(b.import(batch).graph.io[0].dims, (ir::Dims{4, 3, 5}));
}

TEST(OnnxImport, BatchSizeReplacesUnitBatch) {
  ModelBuilder b;
  b.input("x", {1, 3}).output("y");
  b.node("Relu", {"x"}, {"y"});
  ImportOptions options;
  options.batchSize = 8;
  EXPECT_EQ(b.import(options).graph.io[1].dims, (ir::Dims{8, 3}));
}

TEST(OnnxImport, ModelRoundTripsThroughAFile) {
  ModelBuilder b;
  b.input("x", {3}).output("y");
  b.node("Sigmoid", {"x"}, {"y"});
  const std::string path = ::testing::TempDir() + "/onnx_import_roundtrip.onnx";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string bytes = b.bytes();
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  const ImportedModel m = importOnnxFile(path);
  EXPECT_EQ(m.graph.sourceName, path);
  EXPECT_EQ(countOps(m.graph, "sigmoid"), 1u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace qaic::onnx::test
