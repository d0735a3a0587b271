// SPDX-License-Identifier: Apache-2.0
// toJson round trips, and the committed sample network parses, binds its weights and infers.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"
#include "ir/Weights.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;

void expectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const Op& x = a.ops[i];
    const Op& y = b.ops[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.optype, y.optype);
    ASSERT_EQ(x.inputs.size(), y.inputs.size());
    for (std::size_t k = 0; k < x.inputs.size(); ++k) {
      EXPECT_EQ(x.inputs[k].argName, y.inputs[k].argName);
      EXPECT_EQ(x.inputs[k].name, y.inputs[k].name);
    }
    ASSERT_EQ(x.outputs.size(), y.outputs.size());
    for (std::size_t k = 0; k < x.outputs.size(); ++k) {
      EXPECT_EQ(x.outputs[k].name, y.outputs[k].name);
    }
    ASSERT_EQ(x.params.size(), y.params.size());
    for (std::size_t k = 0; k < x.params.size(); ++k) {
      EXPECT_EQ(x.params[k].argName, y.params[k].argName);
      EXPECT_TRUE(x.params[k].value == y.params[k].value) << x.name << "." << x.params[k].argName;
    }
  }
  ASSERT_EQ(a.io.size(), b.io.size());
  for (std::size_t i = 0; i < a.io.size(); ++i) {
    const IoBuffer& x = a.io[i];
    const IoBuffer& y = b.io[i];
    EXPECT_EQ(x.bufferName, y.bufferName);
    EXPECT_EQ(x.tensor, y.tensor);
    EXPECT_EQ(x.direction, y.direction);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.dims, y.dims);
    EXPECT_EQ(x.userLayout, y.userLayout);
    EXPECT_EQ(x.isPartialAllowed, y.isPartialAllowed);
    EXPECT_EQ(x.skipPartialHeader, y.skipPartialHeader);
    EXPECT_EQ(x.allowSkip, y.allowSkip);
    EXPECT_EQ(x.deviceFormat.layout, y.deviceFormat.layout);
    EXPECT_EQ(x.deviceFormat.elementType, y.deviceFormat.elementType);
  }
  EXPECT_EQ(a.allowedShapes, b.allowedShapes);
  EXPECT_EQ(a.weightsFile, b.weightsFile);
}

std::string richGraph() {
  Json in = {{"name", "image"},
             {"tensor", "x"},
             {"direction", "in"},
             {"dtype", "TL_FLOAT"},
             {"dims", {1, 2, 4, 4}},
             {"layout", "NHWC"},
             {"is_partial_allowed", true},
             {"skip_partial_header", true},
             {"allow_skip", true},
             {"device_format", {{"layout", "DWHC"}, {"dtype", "TL_FLOAT16"}}}};
  Json out = {{"name", "out"},       {"tensor", "z"},        {"direction", "out"},
              {"dtype", "TL_FLOAT"}, {"dims", {1, 2, 4, 4}}, {"is_partial_allowed", true}};
  std::vector<Json> ops = {
      makeOp("lr", "lrelu", {{"src", "x"}}, {{"dst", "y"}}, {{"negslope", 0.125}}),
      makeOp("cl", "clip", {{"src", "y"}}, {{"dst", "z"}}, {{"min", -1.5}, {"max", 1e10}}),
      makeOp("pr", "print", {{"src", "z"}}, {}, {{"msg", "z is \"quoted\" \u00e9"}}),
      makeOp("w", "create", {}, {{"dst", "w"}},
             {{"dtype", "TL_FLOAT"}, {"dims", {2}}, {"ran", {0, 0}}, {"data", {0}}, {"from_file", true}}),
  };
  Json extra = {{"io", {in, out}},
                {"allowed_shapes", Json::array({{{"image", {1, 2, 4, 4}}, {"out", {1, 2, 4, 4}}},
                                                {{"image", {1, 2, 2, 4}}, {"out", {1, 2, 2, 4}}}})},
                {"weights", "rich.weights.bin"}};
  return graphText(ops, extra);
}

TEST(ToJson, RoundTripsOpsParamsIoShapesAndWeights) {
  const Graph original = parseGraph(richGraph(), "rich.json");
  for (bool pretty : {false, true}) {
    const std::string text = toJson(original, pretty);
    const Graph again = parseGraph(text, "again.json");
    expectSameGraph(original, again);
    EXPECT_EQ(toJson(again, pretty), text);
  }
  EXPECT_THAT(toJson(original), HasSubstr("\"weights\":\"rich.weights.bin\""));
  EXPECT_THAT(toJson(original), HasSubstr("\"negslope\""));
}

TEST(ToJson, IntegralNumbersAreWrittenAsIntegers) {
  Graph graph = parseGraph(graphText({makeTensor("t", {2, 3})}));
  EXPECT_THAT(toJson(graph), HasSubstr("\"value\":[2,3]"));
  EXPECT_THAT(toJson(graph), ::testing::Not(HasSubstr("\"io\"")));
}

TEST(SampleNetwork, ParsesBindsWeightsAndInfersProbabilities) {
  const std::string path = std::string(QAIC_IR_EXAMPLES_DIR) + "/smallcnn/smallcnn.json";
  Graph graph = loadGraph(path);
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("conv1_out").dims, (Dims{1, 8, 16, 16}));
  EXPECT_EQ(graph.tensors.at("pool1_out").dims, (Dims{1, 8, 8, 8}));
  EXPECT_EQ(graph.tensors.at("probs").dims, (Dims{1, 10}));
  EXPECT_EQ(graph.tensors.at("probs").dtype, DType::Float);
  ASSERT_EQ(graph.io.size(), 2u);
  EXPECT_EQ(graph.io[0].bufferName, "image");
  EXPECT_EQ(graph.io[0].dims, (Dims{1, 3, 16, 16}));
  EXPECT_EQ(graph.io[0].deviceFormat.layout, DeviceLayout::DWHC);
  EXPECT_EQ(graph.io[0].deviceFormat.elementType, DType::Float16);
  EXPECT_EQ(graph.io[1].deviceFormat.layout, DeviceLayout::Flat);
  const std::string weights = weightsPath(graph);
  EXPECT_THAT(weights, HasSubstr("smallcnn/smallcnn.weights.bin"));
  auto file = WeightsFile::open(weights);
  EXPECT_EQ(file->tensors().size(), 4u);
  bindWeights(graph, *file);
  EXPECT_EQ(file->find("fc_weight")->dims, (Dims{10, 512}));
}

Graph memoryGraph() {
  Graph graph;
  graph.sourceName = "imported.onnx";
  Op make;
  make.name = "make_x";
  make.optype = "create";
  make.outputs = {{"dst", "x"}};
  make.params = {{"dtype", std::string("TL_FLOAT")},
                 {"dims", std::vector<double>{1, 1, 4, 4}},
                 {"ran", std::vector<double>{0, 0}},
                 {"data", std::vector<double>{0}},
                 {"from_file", false}};
  Op pool;
  pool.name = "pool";
  pool.optype = "maxpool2d";
  pool.inputs = {{"src", "x"}};
  pool.outputs = {{"dst", "y"}};
  pool.params = {{"size", std::vector<double>{2, 2}},
                 {"stride", std::vector<double>{2, 2}},
                 {"padding", std::vector<double>{0, 0, 0, 0}},
                 {"autopad", std::string("NOTSET")}};
  graph.ops = {make, pool};
  return graph;
}

TEST(InMemoryGraphs, InferShapesValidatesOpsItWasNotParsedFrom) {
  Graph graph = memoryGraph();
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("y").dims, (Dims{1, 1, 2, 2}));
  graph.ops[1].params[0].value = std::vector<double>{2};  // size needs two elements
  try {
    inferShapes(graph);
    FAIL() << "no error";
  } catch (const IrError& e) {
    EXPECT_STREQ(e.what(),
                 "imported.onnx: op 'pool' (maxpool2d): param 'size': expected 2 "
                 "elements, got 1");
  }
}

TEST(InMemoryGraphs, ValidateGraphAppliesEveryParseRule) {
  Graph graph = memoryGraph();
  validateGraph(graph);
  IoBuffer out;
  out.bufferName = "y";
  out.tensor = "y";
  out.direction = Direction::Out;
  out.dims = {1, 1, 2, 2};
  out.allowSkip = true;
  graph.io = {out};
  try {
    validateGraph(graph);
    FAIL() << "no error";
  } catch (const IrError& e) {
    EXPECT_THAT(e.what(), HasSubstr("imported.onnx: io[0] 'y': key 'allow_skip': selective IO "
                                    "requires is_partial_allowed and skip_partial_header"));
  }
}

}  // namespace
}  // namespace qaic::ir::test
