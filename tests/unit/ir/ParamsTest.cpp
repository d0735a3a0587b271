// SPDX-License-Identifier: Apache-2.0
// Per-parameter rules checked at parse time: types, enum values, array lengths, bounds, and the
// cross-parameter constraints that need no input shapes.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;

Json slice(const Json& axis, const Json& start, const Json& len) {
  return makeOp("s1", "slice", {{"src", "t"}}, {{"dst", "u"}}, {{"axis", axis}, {"start", start}, {"len", len}});
}

std::string sliceError(const Json& axis, const Json& start, const Json& len) {
  return irError({makeTensor("t", {4, 6}), slice(axis, start, len)});
}

Json create(const Params& params) { return makeOp("c1", "create", {}, {{"dst", "t"}}, params); }

Params createParams(const Json& dims, const Json& ran, const Json& data, bool fromFile) {
  return {{"dtype", "TL_FLOAT"}, {"dims", dims}, {"ran", ran}, {"data", data}, {"from_file", fromFile}};
}

Json arange(const std::string& dtype, double start, double stop, double step) {
  return makeOp("a1", "arange", {}, {{"dst", "t"}},
                {{"dtype", dtype}, {"start", start}, {"stop", stop}, {"step", step}});
}

Json conv(const Params& overrides) {
  Params params = {{"group", 1},         {"size", {3, 3}},     {"stride", {1, 1}}, {"padding", {0, 0, 0, 0}},
                   {"dilation", {1, 1}}, {"autopad", "NOTSET"}};
  for (const auto& [name, value] : overrides) {
    for (auto& p : params) {
      if (p.first == name) p.second = value;
    }
  }
  return makeOp("conv1", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, params);
}

std::string convError(const Params& overrides) {
  return irError({makeTensor("x", {1, 3, 8, 8}), makeTensor("w", {4, 3, 3, 3}), makeTensor("b", {4}), conv(overrides)});
}

TEST(Params, WrongScalarTypes) {
  EXPECT_THAT(sliceError("1", 0, 1), HasSubstr("op 's1' (slice): param 'axis': expected an integer number"));
  EXPECT_THAT(sliceError(true, 0, 1), HasSubstr("param 'axis': expected an integer number"));
  EXPECT_THAT(sliceError({1}, 0, 1), HasSubstr("param 'axis': expected an integer number"));
  EXPECT_THAT(
      irError({create(createParams({2}, {0, 0}, {0}, false)), makeOp("p", "print", {{"src", "t"}}, {}, {{"msg", 3}})}),
      HasSubstr("op 'p' (print): param 'msg': expected a string"));
  EXPECT_THAT(
      irError({create({{"dtype", "TL_FLOAT"}, {"dims", {2}}, {"ran", {0, 0}}, {"data", {0}}, {"from_file", 0}})}),
      HasSubstr("op 'c1' (create): param 'from_file': expected a bool"));
  EXPECT_THAT(irError({create(createParams(2, {0, 0}, {0}, false))}),
              HasSubstr("param 'dims': expected an array of integer numbers"));
  EXPECT_THAT(irError({create(createParams({2}, {0, 0}, {"a"}, false))}),
              HasSubstr("param 'data': expected an array of numbers"));
}

TEST(Params, IntegersTruncateTowardZero) {
  Graph graph = parseGraph(graphText({makeTensor("t", {4, 6}), slice(1.9, 2.5, 3.99)}));
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("u").dims, (Dims{4, 3}));
  EXPECT_THAT(sliceError(1e300, 0, 1), HasSubstr("param 'axis': integer value out of range"));
  // -0.5 truncates to 0, which satisfies ">= 0".
  EXPECT_EQ(sliceError(-0.5, 0, 1), "");
}

TEST(Params, EnumValues) {
  Json elew = makeOp("e1", "elew", {{"src1", "t"}, {"src2", "t"}}, {{"dst", "u"}}, {{"elew_op", "TL_ADD"}});
  EXPECT_THAT(irError({makeTensor("t", {2}), elew}),
              HasSubstr("op 'e1' (elew): param 'elew_op': unknown value 'TL_ADD' (expected one of "
                        "TL_MUL, TL_DIV, TL_SUM, TL_SUB, TL_MAX, TL_MIN, TL_POW)"));
  EXPECT_THAT(irError({makeTensor("t", {2}, "TL_HALF")}),
              HasSubstr("op 'make_t' (create): param 'dtype': unknown value 'TL_HALF'"));
  EXPECT_THAT(convError({{"autopad", "SAME"}}), HasSubstr("param 'autopad': unknown value 'SAME'"));
  Json pad = makeOp("p1", "pad", {{"src", "t"}}, {{"dst", "u"}}, {{"pads", {0, 0}}, {"mode", "wrap"}, {"value", 0}});
  EXPECT_THAT(irError({makeTensor("t", {2}), pad}), HasSubstr("param 'mode': unknown value 'wrap'"));
  Json sort = makeOp("s1", "sort1d", {{"src_key", "t"}}, {{"dst_key", "u"}}, {{"dir", "up"}});
  EXPECT_THAT(irError({makeTensor("t", {2}), sort}), HasSubstr("param 'dir': unknown value 'up'"));
  Json up = makeOp("u1", "upsample", {{"src", "t"}}, {{"dst", "u"}}, {{"mode", "TL_CUBIC"}, {"scales", {2}}});
  EXPECT_THAT(irError({makeTensor("t", {2}), up}), HasSubstr("param 'mode': unknown value 'TL_CUBIC'"));
}

TEST(Params, Bounds) {
  EXPECT_THAT(irError({makeTensor("t", {2, 0})}),
              HasSubstr("op 'make_t' (create): param 'dims': element 1: value 0 must be > 0"));
  EXPECT_THAT(sliceError(0, 0, 0), HasSubstr("param 'len': value 0 must be > 0"));
  EXPECT_THAT(sliceError(0, -1, 1), HasSubstr("param 'start': value -1 must be >= 0"));
  EXPECT_THAT(sliceError(-1, 0, 1), HasSubstr("param 'axis': value -1 must be >= 0"));
  EXPECT_THAT(convError({{"group", 0}}), HasSubstr("op 'conv1' (conv2d): param 'group': value 0 must be >= 1"));
  EXPECT_THAT(convError({{"stride", {1, 0}}}), HasSubstr("param 'stride': element 1: value 0 must be >= 1"));
  EXPECT_THAT(convError({{"padding", {0, -1, 0, 0}}}), HasSubstr("param 'padding': element 1: value -1 must be >= 0"));
  EXPECT_THAT(convError({{"dilation", {0, 1}}}), HasSubstr("param 'dilation': element 0: value 0 must be >= 1"));
  Json bn = makeOp("bn", "batchnorm", {{"src", "x"}, {"scale", "c"}, {"offset", "c"}, {"mean", "c"}, {"var", "c"}},
                   {{"dst", "y"}}, {{"epsilon", 0}});
  EXPECT_THAT(irError({makeTensor("x", {1, 2}), makeTensor("c", {2}), bn}),
              HasSubstr("op 'bn' (batchnorm): param 'epsilon': value 0 must be > 0"));
  Json reshape = makeOp("r1", "reshape", {{"src", "t"}}, {{"dst", "u"}}, {{"dims", {0, 2}}});
  EXPECT_THAT(irError({makeTensor("t", {2}), reshape}), HasSubstr("param 'dims': element 0: value 0 must be >= 1"));
  Json reshapeNeg = makeOp("r1", "reshape", {{"src", "t"}}, {{"dst", "u"}}, {{"dims", {-1}}});
  EXPECT_THAT(irError({makeTensor("t", {2}), reshapeNeg}), HasSubstr("value -1 must be >= 1"));
  Json up = makeOp("u1", "upsample", {{"src", "t"}}, {{"dst", "u"}}, {{"mode", "TL_NEAREST"}, {"scales", {0}}});
  EXPECT_THAT(irError({makeTensor("t", {2}), up}), HasSubstr("param 'scales': element 0: value 0 must be > 0"));
  Json pick = makeOp("p1", "pick1d", {{"src", "t"}, {"src_index", "i"}}, {{"dst", "u"}}, {{"len", 1}, {"stride", 0}});
  EXPECT_THAT(irError({makeTensor("t", {4}), makeTensor("i", {1}, "TL_INT32"), pick}),
              HasSubstr("op 'p1' (pick1d): param 'stride': value 0 must be >= 1"));
}

TEST(Params, FixedArrayLengths) {
  EXPECT_THAT(irError({create(createParams({2}, {0, 0, 0}, {0}, false))}),
              HasSubstr("op 'c1' (create): param 'ran': expected 2 elements, got 3"));
  EXPECT_THAT(convError({{"size", {3, 3, 3}}}), HasSubstr("param 'size': expected 2 elements, got 3"));
  EXPECT_THAT(convError({{"padding", {1, 1}}}), HasSubstr("param 'padding': expected 4 elements, got 2"));
  Json sub = makeOp("m1", "submean", {{"src", "t"}}, {{"dst", "u"}}, {{"mean", {1, 2}}, {"dtype", "TL_FLOAT"}});
  EXPECT_THAT(irError({makeTensor("t", {2, 2, 3}), sub}), HasSubstr("param 'mean': expected 3 elements, got 2"));
}

TEST(Params, CreateRanAndData) {
  EXPECT_THAT(irError({create(createParams({2}, {3, 1}, {0}, false))}),
              HasSubstr("op 'c1' (create): param 'ran': ran[0] (3.000000) > ran[1] (1.000000)"));
  EXPECT_THAT(irError({create(createParams({2, 2}, {0, 0}, {1, 2, 3, 4, 5}, false))}),
              HasSubstr("op 'c1' (create): param 'data': 5 values exceed the 4 elements of dims"));
  // Data is only used when ran == [0,0] and not from_file.
  EXPECT_EQ(irError({create(createParams({2, 2}, {0, 1}, {1, 2, 3, 4, 5}, false))}), "");
  EXPECT_EQ(irError({create(createParams({2, 2}, {0, 0}, {1, 2, 3, 4, 5}, true))}), "");
  EXPECT_EQ(irError({create(createParams({2, 2}, {0, 0}, {1, 2}, false))}), "");
}

TEST(Params, ArangeConstraints) {
  EXPECT_THAT(irError({arange("TL_FLOAT", 0, 4, 0)}), HasSubstr("op 'a1' (arange): param 'step': must not be 0"));
  EXPECT_THAT(irError({arange("TL_FLOAT", 4, 4, 1)}),
              HasSubstr("param 'stop': stop (4.000000) must be > start (4.000000)"));
  EXPECT_THAT(irError({arange("TL_FLOAT", 0, 4, -1)}),
              HasSubstr("param 'step': length ceil((stop-start)/step) = -4.000000"));
  EXPECT_THAT(irError({arange("TL_INT8", -200, 4, 1)}), HasSubstr("param 'start': value out of range of TL_INT8"));
  EXPECT_THAT(irError({arange("TL_UINT8", 0, 300, 1)}), HasSubstr("param 'stop': value out of range of TL_UINT8"));
  EXPECT_THAT(irError({arange("TL_INT32", 0, 1e20, 1)}), HasSubstr("param 'stop': value out of range of TL_INT32"));
}

TEST(Params, TransposeAxesArePermutations) {
  for (const Json& axes : {Json{0, 0}, Json{0, 2}}) {
    Json op = makeOp("t1", "transpose", {{"src", "t"}}, {{"dst", "u"}}, {{"axes", axes}});
    EXPECT_THAT(irError({makeTensor("t", {2, 3}), op}),
                HasSubstr("op 't1' (transpose): param 'axes': " + axes.dump() + " is not a permutation of 0..1"));
  }
}

TEST(Params, ClipMinNotAboveMax) {
  Json op = makeOp("c1", "clip", {{"src", "t"}}, {{"dst", "u"}}, {{"min", 2}, {"max", 1}});
  EXPECT_THAT(irError({makeTensor("t", {2}), op}),
              HasSubstr("op 'c1' (clip): param 'min': min (2.000000) > max (1.000000)"));
}

TEST(Params, PoolPaddingSmallerThanWindow) {
  Json op = makeOp("p1", "avgpool2d", {{"src", "t"}}, {{"dst", "u"}},
                   {{"size", {2, 2}}, {"stride", {1, 1}}, {"padding", {0, 0, 2, 0}}, {"autopad", "NOTSET"}});
  EXPECT_THAT(irError({makeTensor("t", {1, 1, 4, 4}), op}),
              HasSubstr("op 'p1' (avgpool2d): param 'padding': padding [0,0,2,0] must be smaller "
                        "than the window [2,2]"));
}

}  // namespace
}  // namespace qaic::ir::test
