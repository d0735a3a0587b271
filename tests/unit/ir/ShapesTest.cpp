// SPDX-License-Identifier: Apache-2.0
// Shape rules of the creating, data-movement, element-wise, reduction and linear-algebra
// operators: every happy path, and each shape-dependent violation named by op and argument.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;
using Inputs = std::vector<std::pair<std::string, Dims>>;

TensorInfo infer(const Inputs& inputs, const Json& op, const std::string& tensor = "u",
                 const std::string& dtype = "TL_FLOAT") {
  return inferWith(inputs, op, dtype).tensors.at(tensor);
}

std::string failure(const Inputs& inputs, const Json& op, const std::string& dtype = "TL_FLOAT") {
  std::vector<Json> ops;
  for (const auto& [name, dims] : inputs) ops.push_back(makeTensor(name, dims, dtype));
  ops.push_back(op);
  return irError(ops);
}

Json unary(const std::string& optype, const Params& params = {}) {
  return makeOp("op1", optype, {{"src", "t"}}, {{"dst", "u"}}, params);
}

Json binary(const std::string& optype, const Params& params = {}) {
  return makeOp("op1", optype, {{"src1", "a"}, {"src2", "b"}}, {{"dst", "u"}}, params);
}

TEST(Shapes, CreateZerosArange) {
  EXPECT_EQ(infer({}, makeTensor("u", {2, 3}, "TL_INT16")).dims, (Dims{2, 3}));
  EXPECT_EQ(infer({}, makeTensor("u", {2, 3}, "TL_INT16")).dtype, DType::Int16);
  Json zeros = makeOp("z", "zeros", {}, {{"dst", "u"}}, {{"dtype", "TL_UINT8"}, {"dims", {4}}});
  EXPECT_EQ(infer({}, zeros).dims, (Dims{4}));
  EXPECT_EQ(infer({}, zeros).dtype, DType::UInt8);
  Json arange = makeOp("a", "arange", {}, {{"dst", "u"}},
                       {{"dtype", "TL_INT32"}, {"start", 1}, {"stop", 10}, {"step", 4}});
  EXPECT_EQ(infer({}, arange).dims, (Dims{3}));  // ceil(9/4)
  Json fractional = makeOp("a", "arange", {}, {{"dst", "u"}},
                           {{"dtype", "TL_FLOAT"}, {"start", 0}, {"stop", 1}, {"step", 0.25}});
  EXPECT_EQ(infer({}, fractional).dims, (Dims{4}));
}

TEST(Shapes, PrintProducesNothing) {
  Graph graph = inferWith({{"t", {2}}}, makeOp("p", "fprint", {{"src", "t"}}, {}, {{"msg", "m"}, {"file", "out.txt"}}));
  EXPECT_EQ(graph.tensors.size(), 1u);
}

TEST(Shapes, Slice) {
  Json op = unary("slice", {{"axis", 1}, {"start", 1}, {"len", 3}});
  EXPECT_EQ(infer({{"t", {2, 4}}}, op).dims, (Dims{2, 3}));
  EXPECT_THAT(failure({{"t", {2}}}, op), HasSubstr("op 'op1' (slice): param 'axis': axis 1 out of range for rank 1"));
  EXPECT_THAT(failure({{"t", {2, 3}}}, op), HasSubstr("param 'len': start + len (1+3) > dims[1] (3)"));
  EXPECT_THAT(failure({{"t", {2, 1}}}, op), HasSubstr("param 'start': start 1 >= dims[1] (1)"));
}

TEST(Shapes, Reshape) {
  Json op = unary("reshape", {{"dims", {3, 2}}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, op).dims, (Dims{3, 2}));
  EXPECT_THAT(failure({{"t", {2, 4}}}, op),
              HasSubstr("op 'op1' (reshape): param 'dims': [3,2] holds 6 elements, src [2,4] holds 8"));
}

TEST(Shapes, Transpose) {
  Json op = unary("transpose", {{"axes", {2, 0, 1}}});
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, op).dims, (Dims{4, 2, 3}));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("transpose", {{"axes", {0, 1, 2}}})),
              HasSubstr("op 'op1' (transpose): param 'axes': expected 2 elements for a rank-2 src, got 3"));
}

TEST(Shapes, Concat) {
  Json op = binary("concat", {{"axis", 1}});
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {2, 5}}}, op).dims, (Dims{2, 8}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3, 5}}}, op),
              HasSubstr("op 'op1' (concat): input 'src2': dims [3,5] differ from src1 [2,3] outside axis 1"));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {2}}}, op), HasSubstr("input 'src2': expected rank 2"));
  EXPECT_THAT(failure({{"a", {2}}, {"b", {2}}}, op), HasSubstr("param 'axis': axis 1 out of range for rank 1"));
  std::vector<Json> mixed = {makeTensor("a", {2}), makeTensor("b", {2}, "TL_INT32"), binary("concat", {{"axis", 0}})};
  EXPECT_THAT(irError(mixed), HasSubstr("input 'src2': dtype TL_INT32 differs from 'src1' (TL_FLOAT)"));
}

TEST(Shapes, ElementWise) {
  for (const char* optype : {"relu", "sigmoid"}) {
    EXPECT_EQ(infer({{"t", {2, 3}}}, unary(optype)).dims, (Dims{2, 3})) << optype;
  }
  EXPECT_EQ(infer({{"t", {5}}}, unary("lrelu", {{"negslope", 0.1}})).dims, (Dims{5}));
  EXPECT_EQ(infer({{"t", {5}}}, unary("clip", {{"min", -1}, {"max", 1}})).dims, (Dims{5}));
  Json elew = binary("elew", {{"elew_op", "TL_SUM"}});
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {2, 3}}}, elew).dims, (Dims{2, 3}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {1, 3}}}, elew),
              HasSubstr("op 'op1' (elew): input 'src2': dims [1,3] differ from src1 [2,3] (elew does not broadcast)"));
}

TEST(Shapes, ElewBroadcast) {
  Json op = binary("elew_bcast", {{"elew_op", "TL_MUL"}});
  EXPECT_EQ(infer({{"a", {2, 1, 4}}, {"b", {3, 1}}}, op).dims, (Dims{2, 3, 4}));
  EXPECT_EQ(infer({{"a", {1}}, {"b", {5, 6}}}, op).dims, (Dims{5, 6}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {4}}}, op),
              HasSubstr("op 'op1' (elew_bcast): input 'src2': dims [4] do not broadcast with [2,3]"));
}

TEST(Shapes, SoftmaxAndReductions) {
  EXPECT_EQ(infer({{"t", {2, 3}}}, unary("softmax", {{"axis", 1}})).dims, (Dims{2, 3}));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("softmax", {{"axis", 2}})),
              HasSubstr("op 'op1' (softmax): param 'axis': axis 2 out of range for rank 2"));
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, unary("maxreduce", {{"axis", 1}})).dims, (Dims{2, 1, 4}));
  Json arg = makeOp("op1", "maxreduce_arg", {{"src", "t"}}, {{"dst", "u"}, {"arg", "i"}}, {{"axis", 0}});
  Graph graph = inferWith({{"t", {2, 3}}}, arg);
  EXPECT_EQ(graph.tensors.at("u").dims, (Dims{1, 3}));
  EXPECT_EQ(graph.tensors.at("i").dims, (Dims{1, 3}));
  EXPECT_EQ(graph.tensors.at("i").dtype, DType::Int32);
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {2, 3}}}, binary("dot_product")).dims, (Dims{1}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3, 2}}}, binary("dot_product")),
              HasSubstr("op 'op1' (dot_product): input 'src2': dims [3,2] differ from src1 [2,3]"));
}

TEST(Shapes, Submean) {
  Json op = unary("submean", {{"mean", {1, 2, 3}}, {"dtype", "TL_DOUBLE"}});
  const TensorInfo out = infer({{"t", {4, 5, 3}}}, op, "u", "TL_UINT8");
  EXPECT_EQ(out.dims, (Dims{3, 4, 5}));
  EXPECT_EQ(out.dtype, DType::Double);
  EXPECT_THAT(failure({{"t", {4, 5, 2}}}, op),
              HasSubstr("op 'op1' (submean): input 'src': expected [H,W,C] with C = 3"));
  EXPECT_THAT(failure({{"t", {4, 3}}}, op), HasSubstr("input 'src': expected rank 3, got [4,3]"));
}

TEST(Shapes, VectorOps) {
  EXPECT_EQ(infer({{"t", {6}}}, unary("rearange", {{"start", 0}, {"stop", 6}, {"step", 1}})).dims, (Dims{6}));
  Json sort = makeOp("op1", "sort1d", {{"src_key", "t"}}, {{"dst_key", "u"}}, {{"dir", "TL_SORT_DIR_ASCENDING"}});
  EXPECT_EQ(infer({{"t", {6}}}, sort).dims, (Dims{6}));
  EXPECT_THAT(failure({{"t", {2, 3}}}, sort), HasSubstr("op 'op1' (sort1d): input 'src_key': expected rank 1"));
  Json pick = makeOp("op1", "pick1d", {{"src", "t"}, {"src_index", "i"}}, {{"dst", "u"}}, {{"len", 2}, {"stride", 3}});
  Graph graph = parseGraph(graphText({makeTensor("t", {12}), makeTensor("i", {2}, "TL_INT32"), pick}));
  inferShapes(graph);
  EXPECT_EQ(graph.tensors.at("u").dims, (Dims{6}));
  EXPECT_THAT(irError({makeTensor("t", {12}), makeTensor("i", {2}), pick}),
              HasSubstr("op 'op1' (pick1d): input 'src_index': expected dtype TL_INT32, got TL_FLOAT"));
  EXPECT_THAT(irError({makeTensor("t", {12}), makeTensor("i", {1}, "TL_INT32"), pick}),
              HasSubstr("param 'len': len 2 > src_index length 1"));
}

TEST(Shapes, Flatten) {
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, unary("flatten", {{"axis", 1}})).dims, (Dims{2, 12}));
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, unary("flatten", {{"axis", 0}})).dims, (Dims{1, 24}));
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, unary("flatten", {{"axis", 3}})).dims, (Dims{24, 1}));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("flatten", {{"axis", 3}})),
              HasSubstr("op 'op1' (flatten): param 'axis': axis 3 > rank 2"));
}

TEST(Shapes, Pad) {
  Json op = unary("pad", {{"pads", {0, 1, 2, 3}}, {"mode", "constant"}, {"value", 0}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, op).dims, (Dims{4, 7}));
  EXPECT_THAT(failure({{"t", {2, 3, 4}}}, op),
              HasSubstr("op 'op1' (pad): param 'pads': expected 6 elements for a rank-3 src, got 4"));
  Json reflect = unary("pad", {{"pads", {0, 3, 0, 0}}, {"mode", "reflect"}, {"value", 0}});
  EXPECT_THAT(failure({{"t", {2, 3}}}, reflect),
              HasSubstr("param 'pads': reflect padding of axis 1 must be smaller than its size 3"));
  Json edge = unary("pad", {{"pads", {1, 1}}, {"mode", "edge"}, {"value", 0}});
  EXPECT_EQ(infer({{"t", {1}}}, edge).dims, (Dims{3}));
}

TEST(Shapes, Matmul) {
  Json op = binary("matmul");
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {3, 4}}}, op).dims, (Dims{2, 4}));
  EXPECT_EQ(infer({{"a", {5, 1, 2, 3}}, {"b", {7, 3, 4}}}, op).dims, (Dims{5, 7, 2, 4}));
  EXPECT_EQ(infer({{"a", {3}}, {"b", {2, 3, 4}}}, op).dims, (Dims{2, 4}));
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {3}}}, op).dims, (Dims{2}));
  EXPECT_EQ(infer({{"a", {3}}, {"b", {3}}}, op).dims, (Dims{}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {4, 5}}}, op),
              HasSubstr("op 'op1' (matmul): input 'src2': inner dimension 4 of [4,5] != 3 of src1 [2,3]"));
  EXPECT_THAT(failure({{"a", {2, 2, 3}}, {"b", {3, 3, 4}}}, op),
              HasSubstr("input 'src2': dims [3] do not broadcast with [2]"));
}

TEST(Shapes, MatmulTransB) {
  Json op = binary("matmul_trans_b");
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {4, 3}}}, op).dims, (Dims{2, 4}));
  EXPECT_EQ(infer({{"a", {1, 8, 1, 64}}, {"b", {1, 8, 256, 64}}}, op).dims, (Dims{1, 8, 1, 256}));
  EXPECT_EQ(infer({{"a", {5, 1, 2, 3}}, {"b", {7, 4, 3}}}, op).dims, (Dims{5, 7, 2, 4}));
  EXPECT_EQ(infer({{"a", {3}}, {"b", {2, 4, 3}}}, op).dims, (Dims{2, 4}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3, 4}}}, op),
              HasSubstr("op 'op1' (matmul_trans_b): input 'src2': last dimension 4 of [3,4] != 3 of src1 [2,3]"));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3}}}, op), HasSubstr("op 'op1' (matmul_trans_b): input 'src2'"));
}

TEST(Shapes, MatmulGatheredB) {
  auto op = [](bool transB) {
    return makeOp("op1", "matmul_gathered_b", {{"src1", "a"}, {"src2", "b"}, {"indices", "i"}}, {{"dst", "u"}},
                  {{"trans_b", transB}});
  };
  auto graph = [&](const Dims& a, const Dims& b, const Dims& i, bool transB) {
    return std::vector<Json>{makeTensor("a", a), makeTensor("b", b, "TL_FLOAT16"), makeTensor("i", i, "TL_INT64"),
                             op(transB)};
  };
  auto dimsOf = [](const std::vector<Json>& ops) {
    Graph g = parseGraph(graphText(ops), "test.json");
    inferShapes(g);
    return g.tensors.at("u");
  };
  // Scores: q [1, 8, 1, 64] against 100 of a cache's 256 positions; values: p [1, 8, 1, 100].
  EXPECT_EQ(dimsOf(graph({1, 8, 1, 64}, {1, 8, 256, 64}, {1, 8, 100, 1}, true)).dims, (Dims{1, 8, 1, 100}));
  const TensorInfo values = dimsOf(graph({1, 8, 1, 100}, {1, 8, 256, 64}, {1, 8, 100, 1}, false));
  EXPECT_EQ(values.dims, (Dims{1, 8, 1, 64}));
  EXPECT_EQ(values.dtype, DType::Float);
  EXPECT_THAT(irError(graph({1, 8, 1, 64}, {1, 8, 256, 64}, {1, 4, 100, 1}, true)),
              HasSubstr("op 'op1' (matmul_gathered_b): input 'indices': dims [1,4,100,1] are not [.., N, 1]"));
  EXPECT_THAT(irError(graph({1, 8, 1, 64}, {1, 8, 256, 64}, {1, 8, 100, 2}, true)), HasSubstr("input 'indices'"));
  EXPECT_THAT(irError(graph({1, 8, 1, 32}, {1, 8, 256, 64}, {1, 8, 100, 1}, true)),
              HasSubstr("op 'op1' (matmul_gathered_b): input 'src2': last dimension 64"));
}

// A float16 right operand (a KV cache read where it lies) with a float left one gives float;
// every other mix is an error naming src2.
TEST(Shapes, MatmulOfAFloatAndAFloat16Operand) {
  for (const std::string optype : {"matmul", "matmul_trans_b"}) {
    auto graph = [&](const char* a, const char* b) {
      return std::vector<Json>{makeTensor("a", {2, 3}, a), makeTensor("b", {3, 3}, b), binary(optype)};
    };
    Graph mixed = parseGraph(graphText(graph("TL_FLOAT", "TL_FLOAT16")), "test.json");
    inferShapes(mixed);
    EXPECT_EQ(mixed.tensors.at("u").dtype, DType::Float) << optype;
    EXPECT_EQ(mixed.tensors.at("u").dims, (Dims{2, 3})) << optype;
    EXPECT_THAT(irError(graph("TL_FLOAT16", "TL_FLOAT")), HasSubstr("input 'src2'")) << optype;
    EXPECT_THAT(irError(graph("TL_FLOAT", "TL_INT32")), HasSubstr("input 'src2'")) << optype;
  }
}

Json gemm(bool transA, bool transB) {
  return makeOp("fc", "gemm", {{"a", "a"}, {"b", "b"}, {"c", "c"}}, {{"dst", "u"}},
                {{"alpha", 1}, {"beta", 1}, {"trans_a", transA}, {"trans_b", transB}});
}

TEST(Shapes, Gemm) {
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {3, 4}}, {"c", {4}}}, gemm(false, false)).dims, (Dims{2, 4}));
  EXPECT_EQ(infer({{"a", {3, 2}}, {"b", {4, 3}}, {"c", {2, 1}}}, gemm(true, true)).dims, (Dims{2, 4}));
  EXPECT_EQ(infer({{"a", {2, 3}}, {"b", {3, 4}}, {"c", {1}}}, gemm(false, false)).dims, (Dims{2, 4}));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {4, 3}}, {"c", {4}}}, gemm(false, false)),
              HasSubstr("op 'fc' (gemm): input 'b': inner dimension 4 != 3 of a"));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3, 4}}, {"c", {2}}}, gemm(false, false)),
              HasSubstr("op 'fc' (gemm): input 'c': [2] is not broadcastable to [2,4]"));
  EXPECT_THAT(failure({{"a", {2, 3}}, {"b", {3, 4}}, {"c", {1, 2, 4}}}, gemm(false, false)),
              HasSubstr("input 'c': [1,2,4] is not broadcastable"));
  EXPECT_THAT(failure({{"a", {2, 3, 1}}, {"b", {3, 4}}, {"c", {4}}}, gemm(false, false)),
              HasSubstr("input 'a': expected rank 2"));
}

TEST(Shapes, OverflowingDimsAreErrors) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(irError({makeTensor("t", {big, big})}),
              HasSubstr("op 'make_t' (create): param 'dims': dimension arithmetic overflows"));
  Json up = unary("upsample", {{"mode", "TL_NEAREST"}, {"scales", {1e300}}});
  EXPECT_THAT(failure({{"t", {2}}}, up), HasSubstr("op 'op1' (upsample): param 'scales': axis 0 scales to"));
}

// The project extensions for transformers and current CNNs.
TEST(Shapes, ExtensionElementwiseBroadcastAndBool) {
  EXPECT_EQ(infer({{"a", {2, 1, 4}}, {"b", {3, 1}}}, binary("compare", {{"compare_op", "less"}})).dims,
            (Dims{2, 3, 4}));
  EXPECT_EQ(infer({{"a", {2, 1, 4}}, {"b", {3, 1}}}, binary("compare", {{"compare_op", "less"}})).dtype, DType::Bool);
  EXPECT_THAT(failure({{"a", {2}}, {"b", {2}}}, binary("logical", {{"logical_op", "and"}})),
              HasSubstr("op 'op1' (logical): input 'src1': expected dtype TL_BOOL, got TL_FLOAT"));
  EXPECT_THAT(failure({{"t", {2}}}, unary("unary", {{"func", "not"}, {"alpha", 0}, {"beta", 0}})),
              HasSubstr("input 'src': expected dtype TL_BOOL"));
  EXPECT_THAT(failure({{"t", {2}}}, unary("unary", {{"func", "exp"}, {"alpha", 0}, {"beta", 0}}), "TL_INT32"),
              HasSubstr("input 'src': expected a floating-point dtype, got TL_INT32"));
  EXPECT_EQ(infer({{"t", {2}}}, unary("unary", {{"func", "neg"}, {"alpha", 0}, {"beta", 0}}), "u", "TL_INT64").dtype,
            DType::Int64);
}

TEST(Shapes, ExtensionReductions) {
  Json mean = unary("reduce", {{"reduce_op", "mean"}, {"axes", {0, 2}}, {"keepdims", true}});
  EXPECT_EQ(infer({{"t", {2, 3, 4}}}, mean).dims, (Dims{1, 3, 1}));
  Json all = unary("reduce", {{"reduce_op", "sum"}, {"axes", {0, 1}}, {"keepdims", false}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, all).dims, Dims{});  // rank 0
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("reduce", {{"reduce_op", "sum"}, {"axes", {1, 1}}, {"keepdims", true}})),
              HasSubstr("param 'axes': [1,1] repeats an axis"));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("reduce", {{"reduce_op", "sum"}, {"axes", {2}}, {"keepdims", true}})),
              HasSubstr("param 'axes': axis 2 out of range for rank 2"));
  Json arg = unary("arg_reduce", {{"arg_op", "max"}, {"axis", 1}, {"keepdims", false}, {"select_last_index", false}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, arg).dims, (Dims{2}));
  EXPECT_EQ(infer({{"t", {2, 3}}}, arg).dtype, DType::Int64);
}

TEST(Shapes, ExtensionStridedSliceExpandTile) {
  Json reversed = unary("strided_slice", {{"starts", {0, 4}}, {"ends", {2, -1}}, {"steps", {1, -2}}});
  EXPECT_EQ(infer({{"t", {2, 5}}}, reversed).dims, (Dims{2, 3}));  // indices 4, 2, 0
  Json empty = unary("strided_slice", {{"starts", {1}}, {"ends", {1}}, {"steps", {1}}});
  EXPECT_THAT(failure({{"t", {3}}}, empty), HasSubstr("axis 0: the slice is empty"));
  Json outside = unary("strided_slice", {{"starts", {0}}, {"ends", {4}}, {"steps", {1}}});
  EXPECT_THAT(failure({{"t", {3}}}, outside), HasSubstr("param 'ends': axis 0: 4 outside [0, 3]"));
  EXPECT_THAT(irError({makeTensor("t", {3}), unary("strided_slice", {{"starts", {0}}, {"ends", {3}}, {"steps", {0}}})}),
              HasSubstr("param 'steps': a step must not be 0"));
  EXPECT_EQ(infer({{"t", {3, 1}}}, unary("expand", {{"dims", {2, 3, 4}}})).dims, (Dims{2, 3, 4}));
  EXPECT_THAT(failure({{"t", {3, 2}}}, unary("expand", {{"dims", {3, 4}}})),
              HasSubstr("[3,2] do not broadcast with [3,4]"));
  EXPECT_THAT(failure({{"t", {2}}}, unary("expand", {{"dims", {3, 1}}})), HasSubstr("[2] do not expand to [3,1]"));
  EXPECT_EQ(infer({{"t", {3, 2}}}, unary("tile", {{"repeats", {2, 3}}})).dims, (Dims{6, 6}));
}

TEST(Shapes, ExtensionIndexing) {
  Json gather = makeOp("op1", "gather", {{"src", "t"}, {"indices", "i"}}, {{"dst", "u"}}, {{"axis", 1}});
  const Graph g = [&] {
    std::vector<Json> ops = {makeTensor("t", {4, 5, 6}), makeTensor("i", {2, 3}, "TL_INT64"), gather};
    Graph graph = parseGraph(graphText(ops), "test.json");
    inferShapes(graph);
    return graph;
  }();
  EXPECT_EQ(g.tensors.at("u").dims, (Dims{4, 2, 3, 6}));
  EXPECT_THAT(irError({makeTensor("t", {4}), makeTensor("i", {2}, "TL_FLOAT"), gather}),
              HasSubstr("input 'indices': indices must be TL_INT64 or TL_INT32"));
  Json scatter = makeOp("op1", "scatter_nd", {{"src", "t"}, {"indices", "i"}, {"updates", "v"}}, {{"dst", "u"}},
                        {{"reduction", "add"}});
  EXPECT_THAT(irError({makeTensor("t", {4, 5}), makeTensor("i", {2, 1}, "TL_INT64"), makeTensor("v", {2, 4}), scatter}),
              HasSubstr("input 'updates': expected [2,5], got [2,4]"));
}

// The collectives: all_reduce_sum keeps src, all_gather multiplies dims[axis] by the part count.
TEST(Shapes, Collectives) {
  Json sum = unary("all_reduce_sum", {{"collective", 0}, {"parts", 4}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, sum).dims, (Dims{2, 3}));
  EXPECT_EQ(infer({{"t", {2, 3}}}, sum, "u", "TL_FLOAT16").dtype, DType::Float16);
  EXPECT_THAT(failure({{"t", {2, 3}}}, sum, "TL_INT32"),
              HasSubstr("op 'op1' (all_reduce_sum): input 'src': dtype TL_INT32 is not TL_FLOAT or TL_FLOAT16"));
  Json gather = unary("all_gather", {{"axis", 1}, {"collective", 2}, {"parts", 4}});
  EXPECT_EQ(infer({{"t", {2, 3}}}, gather).dims, (Dims{2, 12}));
  EXPECT_THAT(failure({{"t", {6}}}, gather),
              HasSubstr("op 'op1' (all_gather): param 'axis': axis 1 out of range for rank 1"));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("all_gather", {{"axis", 0}, {"collective", 0}, {"parts", 0}})),
              HasSubstr("param 'parts': value 0 must be >= 1"));
  EXPECT_THAT(failure({{"t", {2, 3}}}, unary("all_reduce_sum", {{"collective", -1}, {"parts", 2}})),
              HasSubstr("param 'collective': value -1 must be >= 0"));
}

}  // namespace
}  // namespace qaic::ir::test
