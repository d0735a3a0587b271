// SPDX-License-Identifier: Apache-2.0
// The general rules of seed 004 and lightnet-ops.md: structure, keys, types, counts, names and
// tensor definitions. Each failure must name the op, the argument and the problem.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;

Json relu(const std::string& name, const std::string& src, const std::string& dst) {
  return makeOp(name, "relu", {{"src", src}}, {{"dst", dst}}, {});
}

TEST(Parser, DocumentationExampleParsesAndInfers) {
  const std::string text = R"({"ops":[
    {"name":"create1","optype":"create","tensors_in":[],"tensors_out":[{"arg_name":"dst","name":"tensor1"}],
     "params":[{"arg_name":"dtype","value":"TL_FLOAT"},{"arg_name":"dims","value":[2,4]},
               {"arg_name":"data","value":[1,2,3,4,5,6,7,8]},{"arg_name":"ran","value":[0,0]},
               {"arg_name":"from_file","value":false}]},
    {"name":"slice1","optype":"slice","tensors_in":[{"arg_name":"src","name":"tensor1"}],
     "tensors_out":[{"arg_name":"dst","name":"tensor2"}],
     "params":[{"arg_name":"axis","value":1},{"arg_name":"start","value":1},{"arg_name":"len","value":3}]},
    {"name":"print1","optype":"print","tensors_in":[{"arg_name":"src","name":"tensor2"}],"tensors_out":[],
     "params":[{"arg_name":"msg","value":"tensor2:"}]}]})";
  Graph graph = parseGraph(text, "example.json");
  ASSERT_EQ(graph.ops.size(), 3u);
  EXPECT_EQ(graph.ops[1].name, "slice1");
  EXPECT_EQ(graph.ops[0].numbers("data").size(), 8u);
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("tensor2").dims, (Dims{2, 3}));
  EXPECT_EQ(graph.tensors.at("tensor2").dtype, DType::Float);
}

TEST(Parser, InvalidJsonNamesTheSource) {
  EXPECT_THAT(irErrorText("{\"ops\": [", false), HasSubstr("test.json: invalid JSON"));
}

TEST(Parser, TopLevelMustBeAnObjectWithOps) {
  EXPECT_THAT(irErrorText("[]", false), HasSubstr("test.json: expected an object, got array"));
  EXPECT_THAT(irErrorText("{}", false), HasSubstr("test.json: missing key 'ops'"));
  EXPECT_THAT(irErrorText(R"({"ops":{}})", false), HasSubstr("key 'ops': expected an array"));
  EXPECT_THAT(irErrorText(R"({"ops":[],"extra":1})", false), HasSubstr("unknown key 'extra'"));
}

TEST(Parser, EveryOpKeyIsRequired) {
  for (const char* key : {"name", "optype", "tensors_in", "tensors_out", "params"}) {
    Json op = makeTensor("t", {2});
    op.erase(key);
    EXPECT_THAT(irError({op}, false), HasSubstr(std::string("missing key '") + key + "'")) << key;
  }
}

TEST(Parser, MissingOpKeyNamesTheOp) {
  Json op = makeTensor("t", {2});
  op.erase("params");
  EXPECT_THAT(irError({op}, false), HasSubstr("op 'make_t' (create): missing key 'params'"));
}

TEST(Parser, WrongKeyTypes) {
  Json op = makeTensor("t", {2});
  op["name"] = 5;
  EXPECT_THAT(irError({op}, false), HasSubstr("ops[0]: key 'name': expected a string"));
  op = makeTensor("t", {2});
  op["tensors_out"] = "dst";
  EXPECT_THAT(irError({op}, false), HasSubstr("key 'tensors_out': expected an array"));
  op = makeTensor("t", {2});
  op["params"][0] = 3;
  EXPECT_THAT(irError({op}, false), HasSubstr("params[0]: expected an object"));
  op = makeTensor("t", {2});
  op["tensors_out"][0]["name"] = true;
  EXPECT_THAT(irError({op}, false), HasSubstr("tensors_out[0]: key 'name': expected a string"));
  EXPECT_THAT(irErrorText(R"({"ops":[7]})", false), HasSubstr("ops[0]: expected an object"));
}

TEST(Parser, UnknownKeysInsideOpsAreRejected) {
  Json op = makeTensor("t", {2});
  op["comment"] = "x";
  EXPECT_THAT(irError({op}, false), HasSubstr("op 'make_t' (create): unknown key 'comment'"));
  op = makeTensor("t", {2});
  op["tensors_out"][0]["shape"] = 1;
  EXPECT_THAT(irError({op}, false), HasSubstr("tensors_out[0]: unknown key 'shape'"));
}

TEST(Parser, UnknownOptype) {
  EXPECT_THAT(irError({makeOp("x", "conv3d", {}, {{"dst", "t"}}, {})}, false),
              HasSubstr("op 'x' (conv3d): unknown optype 'conv3d'"));
}

TEST(Parser, DuplicateOpName) {
  Json second = relu("make_t", "t", "u");
  EXPECT_THAT(irError({makeTensor("t", {2}), second}, false), HasSubstr("op 'make_t' (relu): duplicate op name"));
}

TEST(Parser, DuplicateArgName) {
  Json op = makeOp("c", "concat", {{"src1", "a"}, {"src1", "b"}}, {{"dst", "d"}}, {{"axis", 0}});
  EXPECT_THAT(irError({makeTensor("a", {2}), makeTensor("b", {2}), op}, false),
              HasSubstr("op 'c' (concat): input 'src1': duplicate arg_name"));
  Json clash = makeOp("s", "slice", {{"src", "a"}}, {{"dst", "d"}},
                      {{"axis", 0}, {"start", 0}, {"len", 1}, {"axis", 0}});
  EXPECT_THAT(irError({makeTensor("a", {2}), clash}, false),
              HasSubstr("op 's' (slice): param 'axis': duplicate arg_name"));
}

TEST(Parser, WrongTensorCounts) {
  Json op = makeOp("r", "relu", {{"src", "a"}, {"src2", "a"}}, {{"dst", "d"}}, {});
  EXPECT_THAT(irError({makeTensor("a", {2}), op}, false),
              HasSubstr("op 'r' (relu): tensors_in: expected 1 (src), got 2"));
  Json noOut = makeOp("r", "relu", {{"src", "a"}}, {}, {});
  EXPECT_THAT(irError({makeTensor("a", {2}), noOut}, false),
              HasSubstr("op 'r' (relu): tensors_out: expected 1 (dst), got 0"));
}

TEST(Parser, WrongTensorArgName) {
  Json op = makeOp("r", "relu", {{"input", "a"}}, {{"dst", "d"}}, {});
  EXPECT_THAT(irError({makeTensor("a", {2}), op}, false),
              HasSubstr("op 'r' (relu): input 'input': not an argument of relu (expected src)"));
}

TEST(Parser, MissingAndExtraParams) {
  Json missing = makeOp("s", "slice", {{"src", "a"}}, {{"dst", "d"}}, {{"axis", 0}, {"len", 1}});
  EXPECT_THAT(irError({makeTensor("a", {2}), missing}, false), HasSubstr("op 's' (slice): param 'start': missing"));
  Json extra = makeOp("r", "relu", {{"src", "a"}}, {{"dst", "d"}}, {{"alpha", 1}});
  EXPECT_THAT(irError({makeTensor("a", {2}), extra}, false),
              HasSubstr("op 'r' (relu): param 'alpha': not a parameter of relu"));
}

TEST(Parser, ParamValueShapes) {
  const auto withDims = [](const Json& dims) {
    Json op = makeTensor("t", {2});
    op["params"][1]["value"] = dims;
    return irError({op}, false);
  };
  EXPECT_THAT(withDims(Json::array()), HasSubstr("params[1] 'dims': value: empty array"));
  EXPECT_THAT(withDims({1, "2"}), HasSubstr("params[1] 'dims': value: mixed or nested array"));
  EXPECT_THAT(withDims({{1}, {2}}), HasSubstr("mixed or nested array"));
  EXPECT_THAT(withDims(nullptr), HasSubstr("value: unsupported type null"));
  EXPECT_THAT(withDims(Json::object()), HasSubstr("value: unsupported type object"));
  Json noValue = makeTensor("t", {2});
  noValue["params"][1].erase("value");
  EXPECT_THAT(irError({noValue}, false), HasSubstr("params[1]: missing key 'value'"));
}

TEST(Parser, UndefinedInputTensor) {
  EXPECT_THAT(irError({relu("r", "ghost", "d")}, false),
              HasSubstr("op 'r' (relu): input 'src': tensor 'ghost' is not defined by an earlier "
                        "op or an io input"));
  // Defined later does not count: inputs must come from earlier ops.
  EXPECT_THAT(irError({relu("r", "t", "d"), makeTensor("t", {2})}, false), HasSubstr("tensor 't' is not defined"));
}

TEST(Parser, RedefinedTensor) {
  EXPECT_THAT(irError({makeTensor("t", {2}), relu("r", "t", "t")}, false),
              HasSubstr("op 'r' (relu): output 'dst': redefines tensor 't'"));
}

TEST(Parser, AtMostEightDims) {
  EXPECT_EQ(irError({makeTensor("t", {1, 1, 1, 1, 1, 1, 1, 2})}), "");
  EXPECT_THAT(irError({makeTensor("t", {1, 1, 1, 1, 1, 1, 1, 1, 2})}, false),
              HasSubstr("op 'make_t' (create): param 'dims': 9 dims exceed the maximum of 8"));
  Json reshape = makeOp("r", "reshape", {{"src", "t"}}, {{"dst", "u"}}, {{"dims", {1, 1, 1, 1, 1, 1, 1, 1, 2}}});
  EXPECT_THAT(irError({makeTensor("t", {2}), reshape}, false),
              HasSubstr("op 'r' (reshape): param 'dims': 9 dims exceed"));
}

TEST(Parser, ErrorsCarryOpAndArgNames) {
  try {
    parseGraph(graphText({makeTensor("t", {2}), relu("r", "t", "t")}), "net.json");
    FAIL() << "no error";
  } catch (const IrError& e) {
    EXPECT_EQ(e.opName(), "r");
    EXPECT_EQ(e.argName(), "dst");
    EXPECT_THAT(e.what(), HasSubstr("net.json: op 'r'"));
  }
}

TEST(Parser, LoadGraphReadsAFileAndReportsAMissingOne) {
  EXPECT_THAT(
      [] {
        try {
          loadGraph("/nonexistent/dir/net.json");
        } catch (const IrError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("/nonexistent/dir/net.json: cannot open IR file"));
}

TEST(Parser, EmptyOpsListIsAValidGraph) {
  Graph graph = parseGraph(R"({"ops":[]})");
  inferShapes(graph);
  EXPECT_TRUE(graph.ops.empty());
  EXPECT_TRUE(graph.tensors.empty());
}

}  // namespace
}  // namespace qaic::ir::test
