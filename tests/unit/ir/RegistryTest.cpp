// SPDX-License-Identifier: Apache-2.0
// The operator registry lists every LightNet operator and project extension with the argument
// names of lightnet-ops.md, and the dtype table maps names and sizes both ways.
#include <gtest/gtest.h>

#include "ir/OpRegistry.hpp"

namespace qaic::ir {
namespace {

using Names = std::vector<std::string_view>;

struct Expected {
  std::string_view optype;
  Names inputs;
  Names outputs;
  Names params;
};

const std::vector<Expected> kOperators = {
    {"create", {}, {"dst"}, {"dtype", "dims", "ran", "data", "from_file"}},
    {"zeros", {}, {"dst"}, {"dtype", "dims"}},
    {"arange", {}, {"dst"}, {"dtype", "start", "stop", "step"}},
    {"slice", {"src"}, {"dst"}, {"axis", "start", "len"}},
    {"print", {"src"}, {}, {"msg"}},
    {"fprint", {"src"}, {}, {"msg", "file"}},
    {"reshape", {"src"}, {"dst"}, {"dims"}},
    {"transpose", {"src"}, {"dst"}, {"axes"}},
    {"concat", {"src1", "src2"}, {"dst"}, {"axis"}},
    {"elew", {"src1", "src2"}, {"dst"}, {"elew_op"}},
    {"relu", {"src"}, {"dst"}, {}},
    {"lrelu", {"src"}, {"dst"}, {"negslope"}},
    {"sigmoid", {"src"}, {"dst"}, {}},
    {"softmax", {"src"}, {"dst"}, {"axis"}},
    {"conv2d", {"src", "weight", "bias"}, {"dst"}, {"group", "size", "stride", "padding", "dilation", "autopad"}},
    {"deconv2d",
     {"src", "weight", "bias"},
     {"dst"},
     {"group", "size", "stride", "output_dims", "padding", "output_padding", "dilation", "autopad"}},
    {"maxpool2d", {"src"}, {"dst"}, {"size", "stride", "padding", "autopad"}},
    {"avgpool2d", {"src"}, {"dst"}, {"size", "stride", "padding", "autopad"}},
    {"batchnorm", {"src", "scale", "offset", "mean", "var"}, {"dst"}, {"epsilon"}},
    {"upsample", {"src"}, {"dst"}, {"mode", "scales"}},
    {"resize", {"src"}, {"dst"}, {"mode", "dims"}},
    {"maxreduce", {"src"}, {"dst"}, {"axis"}},
    {"maxreduce_arg", {"src"}, {"dst", "arg"}, {"axis"}},
    {"dot_product", {"src1", "src2"}, {"dst"}, {}},
    {"submean", {"src"}, {"dst"}, {"mean", "dtype"}},
    {"rearange", {"src"}, {"dst"}, {"start", "stop", "step"}},
    {"pick1d", {"src", "src_index"}, {"dst"}, {"len", "stride"}},
    {"sort1d", {"src_key"}, {"dst_key"}, {"dir"}},
    {"matmul", {"src1", "src2"}, {"dst"}, {}},
    {"matmul_trans_b", {"src1", "src2"}, {"dst"}, {}},
    {"matmul_gathered_b", {"src1", "src2", "indices"}, {"dst"}, {"trans_b"}},
    {"gemm", {"a", "b", "c"}, {"dst"}, {"alpha", "beta", "trans_a", "trans_b"}},
    {"elew_bcast", {"src1", "src2"}, {"dst"}, {"elew_op"}},
    {"clip", {"src"}, {"dst"}, {"min", "max"}},
    {"global_avgpool", {"src"}, {"dst"}, {}},
    {"pad", {"src"}, {"dst"}, {"pads", "mode", "value"}},
    {"flatten", {"src"}, {"dst"}, {"axis"}},
    {"cast", {"src"}, {"dst"}, {"dtype"}},
    {"gather", {"src", "indices"}, {"dst"}, {"axis"}},
    {"unary", {"src"}, {"dst"}, {"func", "alpha", "beta"}},
    {"compare", {"src1", "src2"}, {"dst"}, {"compare_op"}},
    {"logical", {"src1", "src2"}, {"dst"}, {"logical_op"}},
    {"where", {"condition", "src1", "src2"}, {"dst"}, {}},
    {"reduce", {"src"}, {"dst"}, {"reduce_op", "axes", "keepdims"}},
    {"arg_reduce", {"src"}, {"dst"}, {"arg_op", "axis", "keepdims", "select_last_index"}},
    {"cumsum", {"src"}, {"dst"}, {"axis", "exclusive", "reverse"}},
    {"topk", {"src"}, {"dst", "indices"}, {"axis", "k", "largest", "sorted"}},
    {"layernorm", {"src", "scale", "bias"}, {"dst"}, {"axis", "epsilon"}},
    {"log_softmax", {"src"}, {"dst"}, {"axis"}},
    {"strided_slice", {"src"}, {"dst"}, {"starts", "ends", "steps"}},
    {"expand", {"src"}, {"dst"}, {"dims"}},
    {"tile", {"src"}, {"dst"}, {"repeats"}},
    {"trilu", {"src"}, {"dst"}, {"upper", "k"}},
    {"gather_elements", {"src", "indices"}, {"dst"}, {"axis"}},
    {"gather_nd", {"src", "indices"}, {"dst"}, {"batch_dims"}},
    {"scatter_elements", {"src", "indices", "updates"}, {"dst"}, {"axis", "reduction"}},
    {"scatter_nd", {"src", "indices", "updates"}, {"dst"}, {"reduction"}},
    {"pool", {"src"}, {"dst"}, {"pool_op", "size", "stride", "dilation", "pads"}},
    {"conv", {"src", "weight", "bias"}, {"dst"}, {"group", "size", "stride", "dilation", "pads"}},
    {"deconv", {"src", "weight", "bias"}, {"dst"}, {"group", "size", "stride", "dilation", "pads", "output_padding"}},
    {"interpolate",
     {"src"},
     {"dst"},
     {"mode", "coordinate_mode", "nearest_mode", "scales", "dims", "cubic_coeff_a", "exclude_outside"}},
    {"grid_sample", {"src", "grid"}, {"dst"}, {"mode", "padding_mode", "align_corners"}},
    {"roi_align",
     {"src", "rois", "batch_indices"},
     {"dst"},
     {"mode", "output_dims", "sampling_ratio", "spatial_scale", "half_pixel"}},
    {"pool_argmax", {"src"}, {"dst"}, {"size", "stride", "dilation", "pads", "column_major"}},
    {"all_reduce_sum", {"src"}, {"dst"}, {"collective", "parts", "wire"}},
    {"all_gather", {"src"}, {"dst"}, {"axis", "collective", "parts", "wire"}},
    {"peer_send", {"src"}, {}, {"channel", "peer", "parts"}},
    {"peer_receive", {}, {"dst"}, {"channel", "peer", "parts", "dtype", "dims"}},
};

TEST(OpRegistry, ListsEveryOperatorWithItsArgumentNames) {
  for (const auto& expected : kOperators) {
    SCOPED_TRACE(std::string(expected.optype));
    const OpSpec* spec = findOpSpec(expected.optype);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->inputs, expected.inputs);
    EXPECT_EQ(spec->outputs, expected.outputs);
    Names params;
    for (const auto& p : spec->params) params.push_back(p.argName);
    EXPECT_EQ(params, expected.params);
    EXPECT_NE(spec->shape, nullptr);
  }
  EXPECT_EQ(opSpecs().size(), kOperators.size());
}

TEST(OpRegistry, UnknownOptypeIsAbsent) { EXPECT_EQ(findOpSpec("conv3d"), nullptr); }

TEST(OpRegistry, MarksHostOnlyAndExtensionOps) {
  EXPECT_TRUE(findOpSpec("print")->hostOnly);
  EXPECT_TRUE(findOpSpec("fprint")->hostOnly);
  EXPECT_FALSE(findOpSpec("conv2d")->hostOnly);
  EXPECT_TRUE(findOpSpec("gemm")->extension);
  EXPECT_FALSE(findOpSpec("elew")->extension);
}

TEST(OpRegistry, ParamTypesFollowTheReference) {
  const OpSpec* conv = findOpSpec("conv2d");
  EXPECT_EQ(conv->params[0].kind, ParamKind::Int);
  EXPECT_EQ(conv->params[0].bound, Bound::AtLeastOne);
  EXPECT_EQ(conv->params[3].kind, ParamKind::IntArray);
  EXPECT_EQ(conv->params[3].length, 4u);
  EXPECT_EQ(conv->params[5].kind, ParamKind::Enum);
  EXPECT_EQ(findOpSpec("pad")->params[0].lengthRule, LengthRule::TwiceRank);
  EXPECT_EQ(findOpSpec("upsample")->params[1].lengthRule, LengthRule::Rank);
  EXPECT_EQ(findOpSpec("batchnorm")->params[0].bound, Bound::Positive);
}

TEST(DTypes, NamesAndSizesRoundTrip) {
  const std::vector<std::pair<std::string_view, std::size_t>> table = {
      {"TL_DOUBLE", 8}, {"TL_FLOAT", 4},  {"TL_FLOAT16", 2}, {"TL_INT64", 8},  {"TL_INT32", 4}, {"TL_INT16", 2},
      {"TL_INT8", 1},   {"TL_UINT64", 8}, {"TL_UINT32", 4},  {"TL_UINT16", 2}, {"TL_UINT8", 1}, {"TL_BOOL", 1}};
  for (const auto& [name, size] : table) {
    const auto type = parseDType(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(dtypeName(*type), name);
    EXPECT_EQ(dtypeSize(*type), size) << name;
  }
  EXPECT_FALSE(parseDType("TL_HALF").has_value());
}

TEST(DTypes, ElementCountChecksOverflow) {
  EXPECT_EQ(elementCount({}), 1);
  EXPECT_EQ(elementCount({2, 3, 4}), 24);
  EXPECT_THROW(elementCount({int64_t{1} << 40, int64_t{1} << 40}), IrError);
}

TEST(OpGetters, TypedLookupsNameTheOpAndArg) {
  Op op;
  op.name = "s1";
  op.optype = "slice";
  op.params = {{"axis", 1.9}, {"msg", std::string("hi")}, {"dims", std::vector<double>{2, -3.7}}};
  EXPECT_EQ(op.integer("axis"), 1);
  EXPECT_EQ(op.integers("dims"), (std::vector<int64_t>{2, -3}));
  EXPECT_EQ(op.string("msg"), "hi");
  try {
    op.boolean("axis");
    FAIL() << "no error";
  } catch (const IrError& e) {
    EXPECT_STREQ(e.what(), "op 's1' (slice): param 'axis': expected a bool");
    EXPECT_EQ(e.opName(), "s1");
    EXPECT_EQ(e.argName(), "axis");
  }
  EXPECT_THROW(op.number("missing"), IrError);
}

}  // namespace
}  // namespace qaic::ir
