// SPDX-License-Identifier: Apache-2.0
// The `io` section (network inputs and outputs as the runtime sees them) and allowed_shapes.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;

Json inputEntry(const Dims& dims = {1, 3, 4, 4}) {
  return {{"name", "image"}, {"tensor", "x"}, {"direction", "in"}, {"dtype", "TL_FLOAT"}, {"dims", dims}};
}

Json outputEntry(const Dims& dims = {1, 3, 4, 4}) {
  return {{"name", "result"}, {"tensor", "y"}, {"direction", "out"}, {"dtype", "TL_FLOAT"}, {"dims", dims}};
}

Json reluOp() { return makeOp("relu1", "relu", {{"src", "x"}}, {{"dst", "y"}}, {}); }

std::string withIo(const Json& io, const Json& shapes = nullptr, std::vector<Json> ops = {reluOp()}) {
  Json extra{{"io", io}};
  if (!shapes.is_null()) extra["allowed_shapes"] = shapes;
  return graphText(ops, extra);
}

std::string errorWithInput(const std::function<void(Json&)>& edit) {
  Json in = inputEntry();
  edit(in);
  return irErrorText(withIo({in, outputEntry()}));
}

TEST(IoSection, ParsesWithDefaultsAndBindsInputs) {
  Graph graph = parseGraph(withIo({inputEntry(), outputEntry()}));
  ASSERT_EQ(graph.io.size(), 2u);
  const IoBuffer& in = graph.io[0];
  EXPECT_EQ(in.bufferName, "image");
  EXPECT_EQ(in.tensor, "x");
  EXPECT_EQ(in.direction, Direction::In);
  EXPECT_EQ(in.userLayout, UserLayout::NCHW);
  EXPECT_FALSE(in.isPartialAllowed || in.skipPartialHeader || in.allowSkip);
  EXPECT_EQ(in.deviceFormat.layout, DeviceLayout::Flat);
  EXPECT_EQ(in.deviceFormat.elementType, DType::Float);
  EXPECT_EQ(graph.io[1].direction, Direction::Out);
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("y").dims, (Dims{1, 3, 4, 4}));
}

TEST(IoSection, ReadsEveryField) {
  Json in = inputEntry();
  in["layout"] = "NHWC";
  in["is_partial_allowed"] = true;
  in["skip_partial_header"] = true;
  in["allow_skip"] = true;
  in["device_format"] = {{"layout", "DHWC"}, {"dtype", "TL_FLOAT16"}};
  Graph graph = parseGraph(withIo({in, outputEntry()}));
  const IoBuffer& buffer = graph.io[0];
  EXPECT_EQ(buffer.userLayout, UserLayout::NHWC);
  EXPECT_TRUE(buffer.isPartialAllowed && buffer.skipPartialHeader && buffer.allowSkip);
  EXPECT_EQ(buffer.deviceFormat.layout, DeviceLayout::DHWC);
  EXPECT_EQ(buffer.deviceFormat.elementType, DType::Float16);
}

TEST(IoSection, RequiredFields) {
  for (const char* key : {"name", "tensor", "direction", "dtype", "dims"}) {
    EXPECT_THAT(errorWithInput([key](Json& in) { in.erase(key); }), HasSubstr(std::string("missing key '") + key + "'"))
        << key;
  }
  EXPECT_THAT(errorWithInput([](Json& in) { in.erase("tensor"); }),
              HasSubstr("test.json: io[0] 'image': missing key 'tensor'"));
  EXPECT_THAT(irErrorText(withIo(Json::object())), HasSubstr("test.json: io: expected an array"));
}

TEST(IoSection, FieldValues) {
  EXPECT_THAT(errorWithInput([](Json& in) { in["direction"] = "both"; }),
              HasSubstr("io[0] 'image': key 'direction': expected \"in\" or \"out\", got 'both'"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["dtype"] = "float"; }),
              HasSubstr("io[0] 'image': key 'dtype': unknown dtype 'float'"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["dims"] = Json::array(); }),
              HasSubstr("key 'dims': expected an array of 1..8 integers"));
  EXPECT_THAT(errorWithInput([](Json& in) {
                in["dims"] = {1, 3, 0, 4};
              }),
              HasSubstr("key 'dims': dimension 0 is not an integer >= 1"));
  EXPECT_THAT(errorWithInput([](Json& in) {
                in["dims"] = {1, 3, 4.5, 4};
              }),
              HasSubstr("dimension 4.5 is not an integer >= 1"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["dims"] = {1, 1, 1, 1, 1, 1, 1, 1, 1}; }),
              HasSubstr("expected an array of 1..8 integers"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["layout"] = "CHW"; }),
              HasSubstr("key 'layout': expected NCHW or NHWC, got 'CHW'"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["is_partial_allowed"] = 1; }),
              HasSubstr("key 'is_partial_allowed': expected a bool"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["colour"] = 1; }), HasSubstr("io[0] 'image': unknown key 'colour'"));
}

TEST(IoSection, LayoutsNeedTheirRanks) {
  std::vector<Json> ops = {makeOp("r", "reshape", {{"src", "x"}}, {{"dst", "y"}}, {{"dims", {48}}})};
  Json in = inputEntry();
  in["dims"] = {48};
  in["layout"] = "NHWC";
  EXPECT_THAT(irErrorText(withIo(Json::array({in}), nullptr, ops)),
              HasSubstr("key 'layout': NHWC needs a rank-4 tensor"));
  in.erase("layout");
  in["device_format"] = {{"layout", "DWHC"}, {"dtype", "TL_FLOAT16"}};
  in["dims"] = {1, 1, 3, 4, 4};
  EXPECT_THAT(irErrorText(withIo(Json::array({in}), nullptr, ops)),
              HasSubstr("io[0] 'image': device_format: key 'layout': DWHC needs a tensor of rank 1 to 4, "
                        "dims have rank 5"));
  // Seed 003's 1-D data with channels: [N, C, L] (and the lower ranks) take DWHC / DHWC.
  for (const Dims& dims : {Dims{2, 3, 8}, Dims{6, 8}, Dims{48}}) {
    in["dims"] = dims;
    in["device_format"] = {{"layout", "DHWC"}, {"dtype", "TL_FLOAT16"}};
    const Graph graph = parseGraph(withIo(Json::array({in}), nullptr, ops));
    EXPECT_EQ(graph.io[0].deviceFormat.layout, DeviceLayout::DHWC);
  }
}

TEST(IoSection, DeviceFormat) {
  EXPECT_THAT(errorWithInput([](Json& in) {
                in["device_format"] = {{"layout", "NCHW"}, {"dtype", "TL_FLOAT"}};
              }),
              HasSubstr("device_format: key 'layout': unknown layout 'NCHW'"));
  EXPECT_THAT(errorWithInput([](Json& in) {
                in["device_format"] = {{"layout", "flat"}};
              }),
              HasSubstr("device_format: missing key 'dtype'"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["device_format"] = "flat"; }),
              HasSubstr("device_format: expected an object"));
}

TEST(IoSection, SelectiveIoNeedsPartialAndSkipHeader) {
  EXPECT_THAT(errorWithInput([](Json& in) { in["allow_skip"] = true; }),
              HasSubstr("io[0] 'image': key 'allow_skip': selective IO requires "
                        "is_partial_allowed and skip_partial_header"));
  EXPECT_THAT(errorWithInput([](Json& in) {
                in["allow_skip"] = true;
                in["is_partial_allowed"] = true;
              }),
              HasSubstr("key 'allow_skip': selective IO requires"));
  EXPECT_THAT(errorWithInput([](Json& in) { in["skip_partial_header"] = true; }),
              HasSubstr("key 'skip_partial_header': requires is_partial_allowed"));
}

TEST(IoSection, NamesAndTensorsAreUnique) {
  Json second = outputEntry();
  second["name"] = "image";
  EXPECT_THAT(irErrorText(withIo({inputEntry(), second})), HasSubstr("io[1] 'image': duplicate buffer name 'image'"));
  Json again = inputEntry();
  again["name"] = "image2";
  EXPECT_THAT(irErrorText(withIo({inputEntry(), again, outputEntry()})),
              HasSubstr("io[1] 'image2': tensor 'x' is bound by more than one io buffer"));
}

TEST(IoSection, InputTensorsAreDefinedOnlyByIo) {
  std::vector<Json> ops = {makeTensor("x", {1, 3, 4, 4}), reluOp()};
  EXPECT_THAT(irErrorText(withIo({inputEntry(), outputEntry()}, nullptr, ops)),
              HasSubstr("op 'make_x' (create): output 'dst': redefines tensor 'x'"));
  // Without the io binding, x is undefined.
  EXPECT_THAT(irErrorText(withIo(Json::array({outputEntry()}))), HasSubstr("tensor 'x' is not defined"));
}

TEST(IoSection, OutputTensorsMustBeProduced) {
  Json out = outputEntry();
  out["tensor"] = "z";
  EXPECT_THAT(irErrorText(withIo({inputEntry(), out})),
              HasSubstr("io[1] 'result': key 'tensor': output tensor 'z' is not produced by any op"));
}

TEST(IoSection, OutputDimsAndDtypeMustMatchInference) {
  EXPECT_THAT(irErrorText(withIo({inputEntry(), outputEntry({1, 3, 4, 5})})),
              HasSubstr("io 'result': dims [1,3,4,5] != inferred [1,3,4,4]"));
  Json out = outputEntry();
  out["dtype"] = "TL_INT32";
  EXPECT_THAT(irErrorText(withIo({inputEntry(), out})), HasSubstr("io 'result': dtype TL_INT32 != inferred TL_FLOAT"));
}

Json partial(Json entry) {
  entry["is_partial_allowed"] = true;
  return entry;
}

TEST(AllowedShapes, ParsedByIoIndexAndInferred) {
  Json shapes = Json::array(
      {{{"image", {1, 3, 4, 4}}, {"result", {1, 3, 4, 4}}}, {{"image", {1, 3, 2, 4}}, {"result", {1, 3, 2, 4}}}});
  Graph graph = parseGraph(withIo({partial(inputEntry()), partial(outputEntry())}, shapes));
  ASSERT_EQ(graph.allowedShapes.size(), 2u);
  EXPECT_EQ(graph.allowedShapes[1][0], (Dims{1, 3, 2, 4}));
  EXPECT_EQ(graph.allowedShapes[1][1], (Dims{1, 3, 2, 4}));
  inferShapes(graph);
  const auto small = inferTensorShapes(graph, graph.allowedShapes[1]);
  EXPECT_EQ(small.at("y").dims, (Dims{1, 3, 2, 4}));
}

TEST(AllowedShapes, EveryBufferNamedAndKnown) {
  const Json io = {partial(inputEntry()), partial(outputEntry())};
  EXPECT_THAT(irErrorText(withIo(io, Json::array({{{"image", {1, 3, 4, 4}}}}))),
              HasSubstr("test.json: allowed_shapes[0]: missing key 'result'"));
  EXPECT_THAT(
      irErrorText(withIo(io, Json::array({{{"image", {1, 3, 4, 4}}, {"result", {1, 3, 4, 4}}, {"other", {1}}}}))),
      HasSubstr("allowed_shapes[0]: unknown io buffer 'other'"));
  EXPECT_THAT(irErrorText(withIo(io, Json::object())), HasSubstr("allowed_shapes: expected an array"));
  EXPECT_THAT(irErrorText(graphText({makeTensor("t", {2})}, {{"allowed_shapes", Json::array({Json::object()})}})),
              HasSubstr("allowed_shapes: needs an io section"));
}

TEST(AllowedShapes, RankAndSizeRules) {
  const Json io = {partial(inputEntry()), outputEntry()};
  EXPECT_THAT(irErrorText(withIo(io, Json::array({{{"image", {3, 4, 4}}, {"result", {1, 3, 4, 4}}}}))),
              HasSubstr("allowed_shapes[0] 'image': rank 3 != io rank 4"));
  EXPECT_THAT(irErrorText(withIo(io, Json::array({{{"image", {1, 3, 4, 8}}, {"result", {1, 3, 4, 4}}}}))),
              HasSubstr("allowed_shapes[0] 'image': 96 elements exceed the io dims' 48"));
  EXPECT_THAT(irErrorText(withIo(io, Json::array({{{"image", {1, 3, 4, 4}}, {"result", {1, 3, 4, 8}}}}))),
              HasSubstr("allowed_shapes[0] 'result': 96 elements exceed the io dims' 48"));
  // Seed 000: a specialization may shrink a non-partial buffer too (in1 [1,128] and [1,2]).
  EXPECT_EQ(irErrorText(withIo(io, Json::array({{{"image", {1, 3, 2, 4}}, {"result", {1, 3, 2, 4}}}}))), "");
}

TEST(AllowedShapes, CombinationMustFitTheNetwork) {
  const Json io = {partial(inputEntry()), partial(outputEntry())};
  const std::string message = irErrorText(
      withIo(io, Json::array({{{"image", {1, 3, 2, 4}}, {"result", {1, 3, 4, 2}}}})));
  EXPECT_THAT(message, HasSubstr("test.json: allowed_shapes[0]: io 'result': dims [1,3,4,2] != "
                                 "inferred [1,3,2,4]"));
}

TEST(InferTensorShapes, PartialInputDims) {
  Graph graph = parseGraph(withIo({partial(inputEntry()), partial(outputEntry())}));
  inferShapes(graph);
  const auto shapes = inferTensorShapes(graph, {Dims{1, 3, 1, 4}, Dims{}});
  EXPECT_EQ(shapes.at("y").dims, (Dims{1, 3, 1, 4}));
  EXPECT_THAT(
      [&] {
        try {
          inferTensorShapes(graph, {Dims{1, 3, 4}, Dims{}});
        } catch (const IrError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("io 'image': rank of [1,3,4] != io rank 4"));
  EXPECT_THROW(inferTensorShapes(graph, {Dims{1, 3, 4, 4}}), IrError);
}

}  // namespace
}  // namespace qaic::ir::test
