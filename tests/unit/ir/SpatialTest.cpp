// SPDX-License-Identifier: Apache-2.0
// Shape rules of conv2d, deconv2d, the pools (with every autopad mode), batchnorm, upsample,
// resize and global_avgpool, plus the shared window geometry.
#include <gmock/gmock.h>

#include "IrTestUtil.hpp"
#include "ir/Window2d.hpp"

namespace qaic::ir::test {
namespace {

using ::testing::HasSubstr;
using Inputs = std::vector<std::pair<std::string, Dims>>;

Params merged(Params params, const Params& overrides) {
  for (const auto& [name, value] : overrides) {
    for (auto& p : params) {
      if (p.first == name) p.second = value;
    }
  }
  return params;
}

Json conv(const Params& overrides = {}) {
  return makeOp("conv1", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}},
                merged({{"group", 1},
                        {"size", {3, 3}},
                        {"stride", {1, 1}},
                        {"padding", {0, 0, 0, 0}},
                        {"dilation", {1, 1}},
                        {"autopad", "NOTSET"}},
                       overrides));
}

Json deconv(const Params& overrides = {}) {
  return makeOp("up1", "deconv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}},
                merged({{"group", 1},
                        {"size", {3, 3}},
                        {"stride", {2, 2}},
                        {"output_dims", {0, 0, 0, 0}},
                        {"padding", {0, 0, 0, 0}},
                        {"output_padding", {0, 0}},
                        {"dilation", {1, 1}},
                        {"autopad", "NOTSET"}},
                       overrides));
}

Json pool(const std::string& optype, const Params& overrides = {}) {
  return makeOp(
      "pool1", optype, {{"src", "x"}}, {{"dst", "y"}},
      merged({{"size", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0, 0, 0}}, {"autopad", "NOTSET"}}, overrides));
}

Dims outDims(const Inputs& inputs, const Json& op) { return inferWith(inputs, op).tensors.at("y").dims; }

std::string failure(const Inputs& inputs, const Json& op) {
  std::vector<Json> ops;
  for (const auto& [name, dims] : inputs) ops.push_back(makeTensor(name, dims));
  ops.push_back(op);
  return irError(ops);
}

const Inputs kConvInputs = {{"x", {1, 3, 8, 8}}, {"w", {4, 3, 3, 3}}, {"b", {4}}};

TEST(Conv2d, OutputSizes) {
  EXPECT_EQ(outDims(kConvInputs, conv()), (Dims{1, 4, 6, 6}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"padding", {1, 1, 1, 1}}})), (Dims{1, 4, 8, 8}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"stride", {2, 3}}})), (Dims{1, 4, 3, 2}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"dilation", {2, 2}}})), (Dims{1, 4, 4, 4}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"padding", {1, 0, 0, 2}}})), (Dims{1, 4, 7, 8}));
}

TEST(Conv2d, Autopad) {
  // SAME: out = ceil(in / stride), whatever `padding` says.
  EXPECT_EQ(outDims(kConvInputs, conv({{"autopad", "SAME_UPPER"}, {"padding", {5, 5, 5, 5}}})), (Dims{1, 4, 8, 8}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"autopad", "SAME_LOWER"}, {"stride", {3, 3}}})), (Dims{1, 4, 3, 3}));
  EXPECT_EQ(outDims(kConvInputs, conv({{"autopad", "VALID"}, {"padding", {1, 1, 1, 1}}})), (Dims{1, 4, 6, 6}));
}

TEST(Conv2d, GroupedAndDepthwise) {
  const Inputs grouped = {{"x", {1, 6, 5, 5}}, {"w", {6, 1, 3, 3}}, {"b", {6}}};
  EXPECT_EQ(outDims(grouped, conv({{"group", 6}})), (Dims{1, 6, 3, 3}));
  EXPECT_THAT(failure(grouped, conv({{"group", 1}})),
              HasSubstr("op 'conv1' (conv2d): param 'group': weight dims[1]*group (1) != src "
                        "channels (6)"));
  const Inputs uneven = {{"x", {1, 6, 5, 5}}, {"w", {4, 2, 3, 3}}, {"b", {4}}};
  EXPECT_THAT(failure(uneven, conv({{"group", 3}})),
              HasSubstr("param 'group': weight dims[0] (4 output channels) is not divisible by "
                        "group (3)"));
}

TEST(Conv2d, ShapeErrorsNameTheArgument) {
  EXPECT_THAT(failure({{"x", {1, 3, 8, 8}}, {"w", {4, 2, 3, 3}}, {"b", {4}}}, conv()),
              HasSubstr("op 'conv1' (conv2d): param 'group': weight dims[1]*group (2) != src channels (3)"));
  EXPECT_THAT(failure(kConvInputs, conv({{"size", {3, 2}}})), HasSubstr("param 'size': [3,2] != weight kernel [3,3]"));
  EXPECT_THAT(failure({{"x", {1, 3, 8, 8}}, {"w", {4, 3, 3, 3}}, {"b", {5}}}, conv()),
              HasSubstr("input 'bias': expected [4], got [5]"));
  EXPECT_THAT(failure({{"x", {3, 8, 8}}, {"w", {4, 3, 3, 3}}, {"b", {4}}}, conv()),
              HasSubstr("input 'src': expected rank 4, got [3,8,8]"));
  EXPECT_THAT(failure({{"x", {1, 3, 8, 8}}, {"w", {4, 3, 9}}, {"b", {4}}}, conv()),
              HasSubstr("input 'weight': expected rank 4"));
  EXPECT_THAT(failure({{"x", {1, 3, 2, 2}}, {"w", {4, 3, 3, 3}}, {"b", {4}}}, conv()),
              HasSubstr("param 'size': window (3) larger than padded height (2)"));
}

TEST(Deconv2d, OutputSizes) {
  const Inputs inputs = {{"x", {1, 4, 5, 5}}, {"w", {4, 2, 3, 3}}, {"b", {2}}};
  // stride*(in-1) + output_padding + ((k-1)*d+1) - pads = 2*4 + 0 + 3 - 0
  EXPECT_EQ(outDims(inputs, deconv()), (Dims{1, 2, 11, 11}));
  EXPECT_EQ(outDims(inputs, deconv({{"padding", {1, 1, 1, 1}}, {"output_padding", {1, 0}}})), (Dims{1, 2, 10, 9}));
  EXPECT_EQ(outDims(inputs, deconv({{"autopad", "SAME_UPPER"}})), (Dims{1, 2, 10, 10}));
  EXPECT_EQ(outDims(inputs, deconv({{"output_dims", {1, 2, 11, 11}}})), (Dims{1, 2, 11, 11}));
  const Inputs grouped = {{"x", {1, 4, 5, 5}}, {"w", {4, 3, 3, 3}}, {"b", {6}}};
  EXPECT_EQ(outDims(grouped, deconv({{"group", 2}})), (Dims{1, 6, 11, 11}));
}

TEST(Deconv2d, Errors) {
  const Inputs inputs = {{"x", {1, 4, 5, 5}}, {"w", {4, 2, 3, 3}}, {"b", {2}}};
  EXPECT_THAT(failure(inputs, deconv({{"output_dims", {1, 2, 12, 12}}})),
              HasSubstr("op 'up1' (deconv2d): param 'output_dims': [1,2,12,12] != computed [1,2,11,11]"));
  EXPECT_THAT(failure({{"x", {1, 3, 5, 5}}, {"w", {4, 2, 3, 3}}, {"b", {2}}}, deconv()),
              HasSubstr("input 'weight': dims[0] (4) != src channels (3)"));
  EXPECT_THAT(failure(inputs, deconv({{"group", 3}})),
              HasSubstr("param 'group': src channels (4) are not divisible by group (3)"));
  EXPECT_THAT(failure(inputs, deconv({{"padding", {9, 0, 9, 0}}})), HasSubstr("param 'padding': output height"));
}

TEST(Pool2d, OutputSizesAndAutopad) {
  for (const char* optype : {"maxpool2d", "avgpool2d"}) {
    SCOPED_TRACE(optype);
    EXPECT_EQ(outDims({{"x", {1, 3, 8, 8}}}, pool(optype)), (Dims{1, 3, 4, 4}));
    EXPECT_EQ(outDims({{"x", {1, 3, 7, 7}}}, pool(optype)), (Dims{1, 3, 3, 3}));
    EXPECT_EQ(outDims({{"x", {1, 3, 7, 7}}}, pool(optype, {{"padding", {1, 1, 1, 1}}})), (Dims{1, 3, 4, 4}));
    EXPECT_EQ(outDims({{"x", {1, 3, 7, 7}}}, pool(optype, {{"autopad", "SAME_UPPER"}})), (Dims{1, 3, 4, 4}));
    EXPECT_THAT(failure({{"x", {3, 7, 7}}}, pool(optype)), HasSubstr("input 'src': expected rank 4"));
  }
}

TEST(Window2d, SamePaddingSplitsAsDocumented) {
  Op op;
  op.name = "p";
  op.optype = "maxpool2d";
  op.params = {{"size", std::vector<double>{2, 3}},
               {"stride", std::vector<double>{1, 1}},
               {"padding", std::vector<double>{0, 0, 0, 0}},
               {"autopad", std::string("SAME_UPPER")}};
  Window2d win = forwardWindow(op, 5, 5);
  // total = (5-1)*1 + k - 5 = k - 1: height 1 -> (0 first, 1 last); width 2 -> (1, 1)
  EXPECT_EQ(win.padTop, 0);
  EXPECT_EQ(win.padBottom, 1);
  EXPECT_EQ(win.padLeft, 1);
  EXPECT_EQ(win.padRight, 1);
  EXPECT_EQ(win.outH, 5);
  EXPECT_EQ(win.outW, 5);
  op.params[3].value = std::string("SAME_LOWER");
  win = forwardWindow(op, 5, 5);
  EXPECT_EQ(win.padTop, 1);
  EXPECT_EQ(win.padBottom, 0);
}

TEST(Spatial, GlobalAvgpool) {
  Json op = makeOp("g", "global_avgpool", {{"src", "x"}}, {{"dst", "y"}}, {});
  EXPECT_EQ(outDims({{"x", {2, 3, 5, 7}}}, op), (Dims{2, 3, 1, 1}));
  EXPECT_EQ(outDims({{"x", {2, 3, 5}}}, op), (Dims{2, 3, 1}));
  EXPECT_THAT(failure({{"x", {2, 3}}}, op), HasSubstr("op 'g' (global_avgpool): input 'src': expected rank >= 3"));
}

TEST(Spatial, Batchnorm) {
  Json op = makeOp("bn", "batchnorm", {{"src", "x"}, {"scale", "s"}, {"offset", "o"}, {"mean", "m"}, {"var", "v"}},
                   {{"dst", "y"}}, {{"epsilon", 1e-5}});
  EXPECT_EQ(outDims({{"x", {2, 3, 4, 4}}, {"s", {3}}, {"o", {3}}, {"m", {3}}, {"v", {3}}}, op), (Dims{2, 3, 4, 4}));
  EXPECT_THAT(failure({{"x", {2, 3, 4, 4}}, {"s", {3}}, {"o", {3}}, {"m", {4}}, {"v", {3}}}, op),
              HasSubstr("op 'bn' (batchnorm): input 'mean': expected [3] (src channels), got [4]"));
}

TEST(Spatial, UpsampleAndResize) {
  Json up = makeOp("u", "upsample", {{"src", "x"}}, {{"dst", "y"}},
                   {{"mode", "TL_NEAREST"}, {"scales", {1, 1, 2, 1.5}}});
  EXPECT_EQ(outDims({{"x", {1, 3, 4, 5}}}, up), (Dims{1, 3, 8, 7}));
  EXPECT_THAT(failure({{"x", {1, 3, 4}}}, up),
              HasSubstr("op 'u' (upsample): param 'scales': expected 3 elements for a rank-3 src, got 4"));
  Json shrink = makeOp("u", "upsample", {{"src", "x"}}, {{"dst", "y"}}, {{"mode", "TL_LINEAR"}, {"scales", {0.1}}});
  EXPECT_THAT(failure({{"x", {4}}}, shrink), HasSubstr("param 'scales': axis 0 scales to 0.000000 (must be >= 1)"));
  Json resize = makeOp("r", "resize", {{"src", "x"}}, {{"dst", "y"}}, {{"mode", "TL_LINEAR"}, {"dims", {1, 3, 9, 9}}});
  EXPECT_EQ(outDims({{"x", {1, 3, 4, 5}}}, resize), (Dims{1, 3, 9, 9}));
  EXPECT_THAT(failure({{"x", {3, 4, 5}}}, resize),
              HasSubstr("op 'r' (resize): param 'dims': expected 3 elements for a rank-3 src, got 4"));
}

TEST(Spatial, GridSample) {
  const auto sample = [](const std::string& mode) {
    return makeOp("s", "grid_sample", {{"src", "x"}, {"grid", "g"}}, {{"dst", "y"}},
                  {{"mode", mode}, {"padding_mode", "border"}, {"align_corners", false}});
  };
  EXPECT_EQ(outDims({{"x", {2, 3, 8, 9}}, {"g", {2, 5, 7, 2}}}, sample("linear")), (Dims{2, 3, 5, 7}));
  EXPECT_EQ(outDims({{"x", {1, 4, 6, 8, 9}}, {"g", {1, 2, 3, 4, 3}}}, sample("nearest")), (Dims{1, 4, 2, 3, 4}));
  EXPECT_EQ(outDims({{"x", {1, 4, 9}}, {"g", {1, 5, 1}}}, sample("linear")), (Dims{1, 4, 5}));
  EXPECT_THAT(
      failure({{"x", {2, 3, 8, 9}}, {"g", {1, 5, 7, 2}}}, sample("linear")),
      HasSubstr("op 's' (grid_sample): input 'grid': expected [2, o1..o2, 2] for src [2,3,8,9], got [1,5,7,2]"));
  EXPECT_THAT(failure({{"x", {2, 3, 8, 9}}, {"g", {2, 5, 7, 3}}}, sample("linear")), HasSubstr("input 'grid'"));
  EXPECT_THAT(failure({{"x", {2, 3}}, {"g", {2, 5}}}, sample("linear")),
              HasSubstr("input 'src': expected [N, C, d1..dk] with k = 1..3, got [2,3]"));
  EXPECT_THAT(failure({{"x", {1, 4, 6, 8, 9}}, {"g", {1, 2, 3, 4, 3}}}, sample("cubic")),
              HasSubstr("param 'mode': cubic samples 2 spatial dims only"));
}

TEST(Spatial, RoiAlign) {
  const Json align = makeOp(
      "r", "roi_align", {{"src", "x"}, {"rois", "rois"}, {"batch_indices", "b"}}, {{"dst", "y"}},
      {{"mode", "avg"}, {"output_dims", {7, 5}}, {"sampling_ratio", 0}, {"spatial_scale", 0.25}, {"half_pixel", true}});
  const auto result = [&](const Dims& src, const Dims& rois, const Dims& indices, const std::string& indexType) {
    const std::vector<Json> ops = {makeTensor("x", src), makeTensor("rois", rois), makeTensor("b", indices, indexType),
                                   align};
    Graph graph = parseGraph(graphText(ops), "test.json");
    inferShapes(graph);
    return graph.tensors.at("y").dims;
  };
  const auto error = [&](const Dims& src, const Dims& rois, const Dims& indices, const std::string& indexType) {
    return irError({makeTensor("x", src), makeTensor("rois", rois), makeTensor("b", indices, indexType), align});
  };
  EXPECT_EQ(result({2, 3, 16, 16}, {5, 4}, {5}, "TL_INT64"), (Dims{5, 3, 7, 5}));
  EXPECT_THAT(error({2, 3, 16, 16}, {5, 5}, {5}, "TL_INT64"),
              HasSubstr("op 'r' (roi_align): input 'rois': expected [R, 4], got [5,5]"));
  EXPECT_THAT(error({2, 3, 16, 16}, {5, 4}, {4}, "TL_INT64"),
              HasSubstr("input 'batch_indices': expected [5] for rois [5,4], got [4]"));
  EXPECT_THAT(error({2, 3, 16, 16}, {5, 4}, {5}, "TL_FLOAT"), HasSubstr("input 'batch_indices': indices must be"));
  EXPECT_THAT(error({3, 16, 16}, {5, 4}, {5}, "TL_INT64"), HasSubstr("input 'src': expected [N, C, H, W]"));
}

}  // namespace
}  // namespace qaic::ir::test
