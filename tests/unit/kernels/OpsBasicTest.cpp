// SPDX-License-Identifier: Apache-2.0
// Creation, data movement, element-wise, reductions and LightNet's 1-D ops against
// hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "GraphBuilder.hpp"

namespace qaic::kernels::test {
namespace {

template <typename T>
std::vector<T> runOne(GraphBuilder& b, const std::string& out, const std::string& dtype, const ir::Dims& dims,
                      const std::vector<HostTensor>& inputs = {}) {
  b.output(out, dtype, dims);
  return runGraph(b.graph(), inputs).at(0).values<T>();
}

TEST(KernelsCreate, DataIsConvertedAndTheRestZero) {
  GraphBuilder b;
  b.create("t", "TL_INT8", {2, 3}, {300, -3.7, 2.9, -500});
  EXPECT_EQ(runOne<int8_t>(b, "t", "TL_INT8", {2, 3}), (std::vector<int8_t>{127, -3, 2, -128, 0, 0}));
}

TEST(KernelsCreate, BoolAndUnsignedConversion) {
  GraphBuilder b;
  b.create("t", "TL_BOOL", {4}, {0, 2, -1, 0.5});
  EXPECT_EQ(runOne<uint8_t>(b, "t", "TL_BOOL", {4}), (std::vector<uint8_t>{0, 1, 1, 1}));
  GraphBuilder u;
  u.create("u", "TL_UINT16", {3}, {-5, 70000, 12.9});
  EXPECT_EQ(runOne<uint16_t>(u, "u", "TL_UINT16", {3}), (std::vector<uint16_t>{0, 65535, 12}));
}

TEST(KernelsCreate, RandomFillIsDeterministicPerNameAndInRange) {
  auto run = [](const std::string& name, const std::string& dtype) {
    GraphBuilder b;
    b.create(name, dtype, {64}, {0}, {-2, 3});
    b.output(name, dtype, {64});
    return runGraph(b.graph()).at(0);
  };
  const auto a = run("weights", "TL_FLOAT").values<float>();
  const auto again = run("weights", "TL_FLOAT").values<float>();
  const auto other = run("bias", "TL_FLOAT").values<float>();
  EXPECT_EQ(a, again);
  EXPECT_NE(a, other);
  for (float v : a) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LE(v, 3.0f);
  }
  const auto ints = run("ints", "TL_INT32").values<int32_t>();
  bool sawLow = false, sawHigh = false;
  for (int32_t v : ints) {
    EXPECT_GE(v, -2);
    EXPECT_LE(v, 3);
    sawLow = sawLow || v == -2;
    sawHigh = sawHigh || v == 3;
  }
  EXPECT_TRUE(sawLow && sawHigh);
}

TEST(KernelsCreate, FromFileUsesTheConstantLookup) {
  GraphBuilder b;
  b.create("w", "TL_FLOAT", {2, 2}, {0}, {0, 0}, true).output("w", "TL_FLOAT", {2, 2});
  const std::vector<float> data{1.5f, -2.0f, 3.25f, 4.0f};
  ir::WeightTensor w{"w", ir::DType::Float, {4}, std::as_bytes(std::span(data))};
  auto out = runGraph(b.graph(), {}, [&](std::string_view name) { return name == "w" ? &w : nullptr; });
  EXPECT_EQ(out.at(0).values<float>(), data);
  try {
    runGraph(b.graph(), {}, [](std::string_view) -> const ir::WeightTensor* { return nullptr; });
    FAIL() << "missing constant accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("create_w"), std::string::npos) << e.what();
  }
}

TEST(KernelsCreation, ZerosAndArange) {
  GraphBuilder b;
  b.op("z", "zeros", {}, {{"dst", "z"}}, {{"dtype", "TL_INT64"}, {"dims", {3}}});
  EXPECT_EQ(runOne<int64_t>(b, "z", "TL_INT64", {3}), (std::vector<int64_t>{0, 0, 0}));
  GraphBuilder a;
  a.op("a", "arange", {}, {{"dst", "a"}}, {{"dtype", "TL_FLOAT"}, {"start", 1}, {"stop", 2}, {"step", 0.3}});
  const auto v = runOne<float>(a, "a", "TL_FLOAT", {4});
  ASSERT_EQ(v.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(v[i], 1.0f + 0.3f * i);
  GraphBuilder ai;
  ai.op("a", "arange", {}, {{"dst", "a"}}, {{"dtype", "TL_INT16"}, {"start", -3}, {"stop", 7}, {"step", 4}});
  EXPECT_EQ(runOne<int16_t>(ai, "a", "TL_INT16", {3}), (std::vector<int16_t>{-3, 1, 5}));
}

TEST(KernelsDataMovement, SliceReshapeFlatten) {
  GraphBuilder b;
  b.create("t", "TL_INT16", {2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
      .op("s", "slice", {{"src", "t"}}, {{"dst", "s"}}, {{"axis", 1}, {"start", 1}, {"len", 2}})
      .op("r", "reshape", {{"src", "s"}}, {{"dst", "r"}}, {{"dims", {4, 2}}})
      .op("f", "flatten", {{"src", "s"}}, {{"dst", "f"}}, {{"axis", 2}})
      .output("r", "TL_INT16", {4, 2})
      .output("f", "TL_INT16", {4, 2});
  auto out = runGraph(b.graph());
  const std::vector<int16_t> expected{3, 4, 5, 6, 9, 10, 11, 12};
  EXPECT_EQ(out[0].values<int16_t>(), expected);
  EXPECT_EQ(out[1].values<int16_t>(), expected);
  EXPECT_EQ(out[1].dims, (ir::Dims{4, 2}));
}

TEST(KernelsDataMovement, TransposeMatchesBruteForce) {
  std::vector<double> data(2 * 3 * 4);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i);
  GraphBuilder b;
  b.create("t", "TL_INT32", {2, 3, 4}, data)
      .op("p", "transpose", {{"src", "t"}}, {{"dst", "p"}}, {{"axes", {2, 0, 1}}});
  const auto v = runOne<int32_t>(b, "p", "TL_INT32", {4, 2, 3});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(v[(i * 2 + j) * 3 + k], (j * 3 + k) * 4 + i);
}

// Transposes that swap the last axes (attention's keys) or move a batch axis too, at sizes that are
// no power of two, for element sizes 2, 4 and 8.
TEST(KernelsDataMovement, TransposeOfTheLastAxesMatchesBruteForce) {
  const int64_t heads = 3, rows = 45, columns = 70;
  std::vector<double> data(static_cast<std::size_t>(heads * rows * columns));
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i % 30000);
  for (const std::vector<double>& axes :
       {std::vector<double>{0, 2, 1}, std::vector<double>{1, 2, 0}, std::vector<double>{2, 0, 1}}) {
    GraphBuilder b16, b32, b64;
    b16.create("t", "TL_INT16", {heads, rows, columns}, data)
        .op("p", "transpose", {{"src", "t"}}, {{"dst", "p"}}, {{"axes", axes}});
    b32.create("t", "TL_FLOAT", {heads, rows, columns}, data)
        .op("p", "transpose", {{"src", "t"}}, {{"dst", "p"}}, {{"axes", axes}});
    b64.create("t", "TL_INT64", {heads, rows, columns}, data)
        .op("p", "transpose", {{"src", "t"}}, {{"dst", "p"}}, {{"axes", axes}});
    const ir::Dims in{heads, rows, columns};
    ir::Dims outDims;
    for (double a : axes) outDims.push_back(in[static_cast<std::size_t>(a)]);
    const auto v16 = runOne<int16_t>(b16, "p", "TL_INT16", outDims);
    const auto v32 = runOne<float>(b32, "p", "TL_FLOAT", outDims);
    const auto v64 = runOne<int64_t>(b64, "p", "TL_INT64", outDims);
    for (int64_t i = 0; i < outDims[0]; ++i) {
      for (int64_t j = 0; j < outDims[1]; ++j) {
        for (int64_t k = 0; k < outDims[2]; ++k) {
          int64_t index[3] = {};
          index[static_cast<std::size_t>(axes[0])] = i;
          index[static_cast<std::size_t>(axes[1])] = j;
          index[static_cast<std::size_t>(axes[2])] = k;
          const double want = data[static_cast<std::size_t>((index[0] * rows + index[1]) * columns + index[2])];
          const auto at = static_cast<std::size_t>((i * outDims[1] + j) * outDims[2] + k);
          ASSERT_EQ(v16[at], static_cast<int16_t>(want)) << i << " " << j << " " << k;
          ASSERT_EQ(v32[at], static_cast<float>(want));
          ASSERT_EQ(v64[at], static_cast<int64_t>(want));
        }
      }
    }
  }
}

// The copies that split over the op's threads when they are large (a decode step reading a whole
// KV cache: gather_nd, transpose, cast) give what one thread gives; marked rows read zeros.
TEST(KernelsDataMovement, LargeCopiesOnTwoThreadsEqualOneThread) {
  const int64_t heads = 16, positions = 512, dim = 128, filled = 400;
  GraphBuilder b;
  b.input("cache", "TL_FLOAT", {1, heads, positions, dim})
      .input("index", "TL_INT64", {1, heads, positions, 1})
      .op("read", "gather_nd", {{"src", "cache"}, {"indices", "index"}}, {{"dst", "rows"}}, {{"batch_dims", 2}})
      .op("flip", "transpose", {{"src", "rows"}}, {{"dst", "keys"}}, {{"axes", {0, 1, 3, 2}}})
      .op("narrow", "cast", {{"src", "keys"}}, {{"dst", "half"}}, {{"dtype", "TL_FLOAT16"}})
      .output("keys", "TL_FLOAT", {1, heads, dim, positions})
      .output("half", "TL_FLOAT16", {1, heads, dim, positions});
  std::vector<float> cache(static_cast<std::size_t>(heads * positions * dim));
  for (std::size_t i = 0; i < cache.size(); ++i) cache[i] = static_cast<float>(i % 2001);  // exact in float16
  std::vector<int64_t> index(static_cast<std::size_t>(heads * positions));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t p = 0; p < positions; ++p)
      index[static_cast<std::size_t>(h * positions + p)] = p < filled ? positions - 1 - p
                                                                      : std::numeric_limits<int32_t>::max();
  }
  const std::vector<HostTensor> inputs{HostTensor::of(ir::DType::Float, {1, heads, positions, dim}, cache),
                                       HostTensor::of(ir::DType::Int64, {1, heads, positions, 1}, index)};
  BuildOptions one, two;
  two.threads = 2;
  const auto single = runGraph(b.graph(), inputs, nullptr, one);
  const auto split = runGraph(b.graph(), inputs, nullptr, two);
  EXPECT_EQ(single[0].bytes, split[0].bytes);
  EXPECT_EQ(single[1].bytes, split[1].bytes);
  const auto keys = split[0].values<float>();
  for (int64_t h = 0; h < heads; h += 5) {
    for (int64_t d = 0; d < dim; d += 7) {
      for (int64_t p = 0; p < positions; p += 3) {
        const float want = p < filled ? cache[static_cast<std::size_t>((h * positions + positions - 1 - p) * dim + d)]
                                      : 0.0f;
        ASSERT_EQ(keys[static_cast<std::size_t>((h * dim + d) * positions + p)], want) << h << " " << d << " " << p;
      }
    }
  }
}

TEST(KernelsDataMovement, Concat) {
  GraphBuilder b;
  b.create("a", "TL_UINT8", {2, 2}, {1, 2, 3, 4})
      .create("b", "TL_UINT8", {2, 1}, {9, 8})
      .op("c", "concat", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}}, {{"axis", 1}});
  EXPECT_EQ(runOne<uint8_t>(b, "c", "TL_UINT8", {2, 3}), (std::vector<uint8_t>{1, 2, 9, 3, 4, 8}));
  GraphBuilder b0;
  b0.create("a", "TL_FLOAT", {1, 2}, {1, 2})
      .create("b", "TL_FLOAT", {2, 2}, {3, 4, 5, 6})
      .op("c", "concat", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}}, {{"axis", 0}});
  EXPECT_EQ(runOne<float>(b0, "c", "TL_FLOAT", {3, 2}), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(KernelsDataMovement, PadModes) {
  auto pad = [](const std::string& mode) {
    GraphBuilder b;
    b.create("t", "TL_FLOAT", {2, 3}, {1, 2, 3, 4, 5, 6})
        .op("p", "pad", {{"src", "t"}}, {{"dst", "p"}}, {{"pads", {1, 2, 0, 1}}, {"mode", mode}, {"value", 9}});
    return runOne<float>(b, "p", "TL_FLOAT", {3, 6});
  };
  EXPECT_EQ(pad("constant"), (std::vector<float>{9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9}));
  EXPECT_EQ(pad("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6}));
  EXPECT_EQ(pad("reflect"), (std::vector<float>{6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
}

template <typename T>
std::vector<T> elew(const std::string& dtype, const std::string& op, const std::vector<double>& a,
                    const std::vector<double>& b) {
  const ir::Dims dims{static_cast<int64_t>(a.size())};
  GraphBuilder g;
  g.create("a", dtype, dims, a)
      .create("b", dtype, dims, b)
      .op("e", "elew", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "e"}}, {{"elew_op", op}});
  return runOne<T>(g, "e", dtype, dims);
}

TEST(KernelsElementwise, EveryElewOpOnFloats) {
  const std::vector<double> a{1, -2, 3, 0.5}, b{2, 4, -1, 2};
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_MUL", a, b), (std::vector<float>{2, -8, -3, 1}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_DIV", a, b), (std::vector<float>{0.5, -0.5, -3, 0.25}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_SUM", a, b), (std::vector<float>{3, 2, 2, 2.5}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_SUB", a, b), (std::vector<float>{-1, -6, 4, -1.5}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_MAX", a, b), (std::vector<float>{2, 4, 3, 2}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_MIN", a, b), (std::vector<float>{1, -2, -1, 0.5}));
  EXPECT_EQ(elew<float>("TL_FLOAT", "TL_POW", a, b), (std::vector<float>{1, 16, 1.0f / 3.0f, 0.25}));
}

TEST(KernelsElementwise, IntegersWrapAndTruncate) {
  EXPECT_EQ(elew<int8_t>("TL_INT8", "TL_SUM", {100, -100, 7}, {100, -100, 1}), (std::vector<int8_t>{-56, 56, 8}));
  EXPECT_EQ(elew<int32_t>("TL_INT32", "TL_DIV", {7, -7, -2147483648.0}, {2, 2, -1}),
            (std::vector<int32_t>{3, -3, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(elew<uint8_t>("TL_UINT8", "TL_SUB", {1, 5}, {2, 3}), (std::vector<uint8_t>{255, 2}));
  EXPECT_EQ(elew<int16_t>("TL_INT16", "TL_POW", {2, 3, 2}, {3, 2, 20}), (std::vector<int16_t>{8, 9, 32767}));
  EXPECT_EQ(elew<int64_t>("TL_INT64", "TL_MAX", {-1, 9}, {3, 2}), (std::vector<int64_t>{3, 9}));
}

TEST(KernelsElementwise, IntegerDivisionByZeroIsAnError) {
  try {
    elew<int32_t>("TL_INT32", "TL_DIV", {1, 2}, {1, 0});
    FAIL() << "division by zero accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'e'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(KernelsElementwise, BroadcastMatchesBruteForce) {
  // [2,1,3] op [4,1] -> [2,4,3]
  const std::vector<double> a{1, 2, 3, 4, 5, 6}, b{10, 20, 30, 40};
  GraphBuilder g;
  g.create("a", "TL_FLOAT", {2, 1, 3}, a)
      .create("b", "TL_FLOAT", {4, 1}, b)
      .op("e", "elew_bcast", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "e"}}, {{"elew_op", "TL_SUB"}});
  const auto v = runOne<float>(g, "e", "TL_FLOAT", {2, 4, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(v[(i * 4 + j) * 3 + k], a[i * 3 + k] - b[j]);
  GraphBuilder s;  // scalar-like [1] against a matrix, integers
  s.create("a", "TL_INT32", {2, 2}, {1, 2, 3, 4})
      .create("b", "TL_INT32", {1}, {5})
      .op("e", "elew_bcast", {{"src1", "b"}, {"src2", "a"}}, {{"dst", "e"}}, {{"elew_op", "TL_MUL"}});
  EXPECT_EQ(runOne<int32_t>(s, "e", "TL_INT32", {2, 2}), (std::vector<int32_t>{5, 10, 15, 20}));
}

TEST(KernelsElementwise, UnaryOps) {
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {5}, {-2, -0.5, 0, 1.5, 3})
      .op("r", "relu", {{"src", "x"}}, {{"dst", "r"}})
      .op("l", "lrelu", {{"src", "x"}}, {{"dst", "l"}}, {{"negslope", 0.1}})
      .op("s", "sigmoid", {{"src", "x"}}, {{"dst", "s"}})
      .op("c", "clip", {{"src", "x"}}, {{"dst", "c"}}, {{"min", -1}, {"max", 2}})
      .output("r", "TL_FLOAT", {5})
      .output("l", "TL_FLOAT", {5})
      .output("s", "TL_FLOAT", {5})
      .output("c", "TL_FLOAT", {5});
  const auto out = runGraph(g.graph());
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{0, 0, 0, 1.5, 3}));
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{-0.2f, -0.05f, 0, 1.5, 3}));
  const std::vector<float> x{-2, -0.5, 0, 1.5, 3};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(out[2].values<float>()[i], 1.0 / (1.0 + std::exp(-x[i])), 1e-6);
  EXPECT_EQ(out[3].values<float>(), (std::vector<float>{-1, -0.5, 0, 1.5, 2}));
  GraphBuilder i;
  i.create("x", "TL_INT8", {3}, {-5, 0, 7}).op("r", "relu", {{"src", "x"}}, {{"dst", "r"}});
  EXPECT_EQ(runOne<int8_t>(i, "r", "TL_INT8", {3}), (std::vector<int8_t>{0, 0, 7}));
  GraphBuilder h;  // float16 computes through float: -1.5 -> 0, 2 stays 2 (0x4000)
  h.create("x", "TL_FLOAT16", {3}, {-1.5, 0.25, 2}).op("r", "relu", {{"src", "x"}}, {{"dst", "r"}});
  EXPECT_EQ(runOne<uint16_t>(h, "r", "TL_FLOAT16", {3}), (std::vector<uint16_t>{0x0000, 0x3400, 0x4000}));
}

TEST(KernelsElementwise, BatchnormPerChannel) {
  const auto x = randomFloats(2 * 3 * 4, 5);
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {2, 3, 4}, toDoubles(x))
      .create("scale", "TL_FLOAT", {3}, {1, 2, 0.5})
      .create("offset", "TL_FLOAT", {3}, {0, -1, 3})
      .create("mean", "TL_FLOAT", {3}, {0.1, -0.2, 0.3})
      .create("var", "TL_FLOAT", {3}, {1, 4, 0.25})
      .op("bn", "batchnorm", {{"src", "x"}, {"scale", "scale"}, {"offset", "offset"}, {"mean", "mean"}, {"var", "var"}},
          {{"dst", "y"}}, {{"epsilon", 1e-3}});
  const auto y = runOne<float>(g, "y", "TL_FLOAT", {2, 3, 4});
  const double scale[] = {1, 2, 0.5}, offset[] = {0, -1, 3}, mean[] = {0.1, -0.2, 0.3}, var[] = {1, 4, 0.25};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i) {
        const int k = (n * 3 + c) * 4 + i;
        EXPECT_NEAR(y[k], (x[k] - mean[c]) / std::sqrt(var[c] + 1e-3) * scale[c] + offset[c], 1e-5);
      }
}

TEST(KernelsReduction, SoftmaxAlongAxis) {
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {2, 3}, {1, 2, 3, 1000, 1000, 1000})
      .op("s", "softmax", {{"src", "x"}}, {{"dst", "s"}}, {{"axis", 1}});
  const auto v = runOne<float>(g, "s", "TL_FLOAT", {2, 3});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(v[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(v[2], std::exp(3.0) / z, 1e-6);
  for (int i = 3; i < 6; ++i) EXPECT_NEAR(v[i], 1.0 / 3.0, 1e-6);  // no overflow
}

TEST(KernelsReduction, MaxreduceAndArgFirstMaxWins) {
  GraphBuilder g;
  g.create("x", "TL_INT32", {2, 3}, {4, 9, 9, -1, -7, -1})
      .op("m", "maxreduce_arg", {{"src", "x"}}, {{"dst", "m"}, {"arg", "i"}}, {{"axis", 1}})
      .op("m0", "maxreduce", {{"src", "x"}}, {{"dst", "m0"}}, {{"axis", 0}})
      .output("m", "TL_INT32", {2, 1})
      .output("i", "TL_INT32", {2, 1})
      .output("m0", "TL_INT32", {1, 3});
  const auto out = runGraph(g.graph());
  EXPECT_EQ(out[0].values<int32_t>(), (std::vector<int32_t>{9, -1}));
  EXPECT_EQ(out[1].values<int32_t>(), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(out[2].values<int32_t>(), (std::vector<int32_t>{4, 9, 9}));
}

// Integer running sums wrap (like the other integer reductions); exclusive leaves each element
// out of its own sum, reverse runs from the end of the axis.
TEST(KernelsAlongAxis, CumsumWrapsIntegersAndHonoursExclusiveAndReverse) {
  GraphBuilder g;
  g.create("x", "TL_INT32", {2, 3}, {2147483647, 1, 5, 1, 2, 3})
      .op("sum", "cumsum", {{"src", "x"}}, {{"dst", "sum"}}, {{"axis", 1}, {"exclusive", false}, {"reverse", false}})
      .op("back", "cumsum", {{"src", "x"}}, {{"dst", "back"}}, {{"axis", 1}, {"exclusive", true}, {"reverse", true}})
      .op("down", "cumsum", {{"src", "x"}}, {{"dst", "down"}}, {{"axis", 0}, {"exclusive", false}, {"reverse", false}})
      .output("sum", "TL_INT32", {2, 3})
      .output("back", "TL_INT32", {2, 3})
      .output("down", "TL_INT32", {2, 3});
  const auto out = runGraph(g.graph());
  EXPECT_EQ(out[0].values<int32_t>(), (std::vector<int32_t>{2147483647, -2147483648, -2147483643, 1, 3, 6}));
  EXPECT_EQ(out[1].values<int32_t>(), (std::vector<int32_t>{6, 5, 0, 5, 3, 0}));
  EXPECT_EQ(out[2].values<int32_t>(), (std::vector<int32_t>{2147483647, 1, 5, -2147483648, 3, 8}));
}

// Best first, equal values by the lower index, NaN above every number (as PyTorch orders them).
TEST(KernelsAlongAxis, TopkOrdersTiesByIndexAndNanFirst) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, 6})
      .op("top", "topk", {{"src", "x"}}, {{"dst", "top"}, {"indices", "ti"}},
          {{"axis", 1}, {"k", 3}, {"largest", true}, {"sorted", true}})
      .op("low", "topk", {{"src", "x"}}, {{"dst", "low"}, {"indices", "li"}},
          {{"axis", 1}, {"k", 3}, {"largest", false}, {"sorted", true}})
      .output("top", "TL_FLOAT", {1, 3})
      .output("ti", "TL_INT64", {1, 3})
      .output("low", "TL_FLOAT", {1, 3})
      .output("li", "TL_INT64", {1, 3});
  const auto out = runGraph(g.graph(), {HostTensor::of<float>(ir::DType::Float, {1, 6}, {3, 7, nan, 7, -1, 3})});
  const auto top = out[0].values<float>();
  EXPECT_TRUE(std::isnan(top[0]));
  EXPECT_EQ(top[1], 7.0f);
  EXPECT_EQ(top[2], 7.0f);
  EXPECT_EQ(out[1].values<int64_t>(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(out[2].values<float>(), (std::vector<float>{-1, 3, 3}));
  EXPECT_EQ(out[3].values<int64_t>(), (std::vector<int64_t>{4, 0, 5}));
}

TEST(KernelsReduction, DotProductAndGlobalAvgpool) {
  GraphBuilder g;
  g.create("a", "TL_INT16", {4}, {1, 2, 3, 4})
      .create("b", "TL_INT16", {4}, {5, -6, 7, 8})
      .op("d", "dot_product", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "d"}});
  EXPECT_EQ(runOne<int16_t>(g, "d", "TL_INT16", {1}), (std::vector<int16_t>{5 - 12 + 21 + 32}));
  GraphBuilder f;
  f.create("a", "TL_FLOAT", {3}, {0.5, 2, -1})
      .create("b", "TL_FLOAT", {3}, {4, 0.25, 3})
      .op("d", "dot_product", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "d"}});
  EXPECT_EQ(runOne<float>(f, "d", "TL_FLOAT", {1}), (std::vector<float>{2 + 0.5f - 3}));
  GraphBuilder p;
  p.create("x", "TL_FLOAT", {1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40})
      .op("g", "global_avgpool", {{"src", "x"}}, {{"dst", "g"}});
  EXPECT_EQ(runOne<float>(p, "g", "TL_FLOAT", {1, 2, 1, 1}), (std::vector<float>{2.5, 25}));
}

TEST(KernelsVector1d, SubmeanRearangePickSort) {
  GraphBuilder s;  // [H=1, W=2, C=3] -> [C, H, W]
  s.create("x", "TL_UINT8", {1, 2, 3}, {10, 20, 30, 40, 50, 60})
      .op("m", "submean", {{"src", "x"}}, {{"dst", "m"}}, {{"mean", {1, 2, 3}}, {"dtype", "TL_FLOAT"}});
  EXPECT_EQ(runOne<float>(s, "m", "TL_FLOAT", {3, 1, 2}), (std::vector<float>{9, 39, 18, 48, 27, 57}));

  GraphBuilder r;
  r.create("x", "TL_INT32", {4}, {0})
      .op("r", "rearange", {{"src", "x"}}, {{"dst", "y"}}, {{"start", 5}, {"stop", 13}, {"step", 2}});
  EXPECT_EQ(runOne<int32_t>(r, "y", "TL_INT32", {4}), (std::vector<int32_t>{5, 7, 9, 11}));

  GraphBuilder p;
  p.create("x", "TL_FLOAT", {6}, {0, 1, 2, 3, 4, 5})
      .create("i", "TL_INT32", {2}, {2, 0})
      .op("p", "pick1d", {{"src", "x"}, {"src_index", "i"}}, {{"dst", "p"}}, {{"len", 2}, {"stride", 2}});
  EXPECT_EQ(runOne<float>(p, "p", "TL_FLOAT", {4}), (std::vector<float>{4, 5, 0, 1}));

  GraphBuilder bad;
  bad.create("x", "TL_FLOAT", {6}, {0, 1, 2, 3, 4, 5})
      .create("i", "TL_INT32", {1}, {3})
      .op("p", "pick1d", {{"src", "x"}, {"src_index", "i"}}, {{"dst", "p"}}, {{"len", 1}, {"stride", 2}})
      .output("p", "TL_FLOAT", {2});
  EXPECT_THROW(runGraph(bad.graph()), ExecutionError);

  for (const std::string dir : {"TL_SORT_DIR_ASCENDING", "TL_SORT_DIR_DESCENDING"}) {
    GraphBuilder so;
    so.create("k", "TL_INT64", {5}, {3, -1, 7, 3, 0})
        .op("s", "sort1d", {{"src_key", "k"}}, {{"dst_key", "s"}}, {{"dir", dir}});
    const auto v = runOne<int64_t>(so, "s", "TL_INT64", {5});
    EXPECT_EQ(v, dir == "TL_SORT_DIR_ASCENDING" ? (std::vector<int64_t>{-1, 0, 3, 3, 7})
                                                : (std::vector<int64_t>{7, 3, 3, 0, -1}));
  }
}

}  // namespace
}  // namespace qaic::kernels::test
