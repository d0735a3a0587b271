// SPDX-License-Identifier: Apache-2.0
#include "ir/OpRegistry.hpp"

#include "ir/ShapeRules.hpp"

namespace qaic::ir {
namespace {

using namespace rules;

std::vector<std::string_view> values(std::span<const std::string_view> list) { return {list.begin(), list.end()}; }

const std::vector<std::string_view>& dtypeNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all;
    for (int code = 0; code <= static_cast<int>(DType::Bool); ++code) {
      all.push_back(dtypeName(static_cast<DType>(code)));
    }
    return all;
  }();
  return names;
}

ParamSpec number(std::string_view name, Bound bound = Bound::None) {
  return {name, ParamKind::Number, bound, LengthRule::Any, 0, {}};
}
ParamSpec integer(std::string_view name, Bound bound = Bound::None) {
  return {name, ParamKind::Int, bound, LengthRule::Any, 0, {}};
}
ParamSpec boolean(std::string_view name) { return {name, ParamKind::Bool, Bound::None, LengthRule::Any, 0, {}}; }
ParamSpec string(std::string_view name) { return {name, ParamKind::String, Bound::None, LengthRule::Any, 0, {}}; }
ParamSpec oneOf(std::string_view name, std::vector<std::string_view> allowed) {
  return {name, ParamKind::Enum, Bound::None, LengthRule::Any, 0, std::move(allowed)};
}
ParamSpec optionalOneOf(std::string_view name, std::vector<std::string_view> allowed) {
  ParamSpec spec = oneOf(name, std::move(allowed));
  spec.optional = true;
  return spec;
}
ParamSpec ints(std::string_view name, Bound bound, LengthRule rule, std::size_t length = 0) {
  return {name, ParamKind::IntArray, bound, rule, length, {}};
}
ParamSpec numbers(std::string_view name, Bound bound, LengthRule rule, std::size_t length = 0) {
  return {name, ParamKind::NumberArray, bound, rule, length, {}};
}
ParamSpec dtype() { return oneOf("dtype", dtypeNames()); }
ParamSpec autopad() { return oneOf("autopad", values(kAutopads)); }
ParamSpec pair(std::string_view name, Bound bound) { return ints(name, bound, LengthRule::Fixed, 2); }
ParamSpec padding() { return ints("padding", Bound::NonNegative, LengthRule::Fixed, 4); }

std::vector<OpSpec> buildRegistry() {
  std::vector<OpSpec> specs;
  auto add = [&specs](OpSpec spec) { specs.push_back(std::move(spec)); };
  // One row per operator, kept as rows for reading across: name, inputs, outputs, params,
  // structural check, shape rule, host only, extension, the shape rule in words.
  // clang-format off
  // LightNet's operators.
  add({"create", {}, {"dst"},
       {dtype(), ints("dims", Bound::Positive, LengthRule::UpToMaxRank),
        numbers("ran", Bound::None, LengthRule::Fixed, 2),
        numbers("data", Bound::None, LengthRule::Any), boolean("from_file")},
       checkCreate, shapeCreate, false, false, "dst: dtype, dims"});
  add({"zeros", {}, {"dst"}, {dtype(), ints("dims", Bound::Positive, LengthRule::UpToMaxRank)},
       nullptr, shapeCreate, false, false, "dst: dtype, dims (all zero)"});
  add({"arange", {}, {"dst"}, {dtype(), number("start"), number("stop"), number("step")},
       checkArange, shapeArange, false, false, "dst: [ceil((stop-start)/step)], dtype"});
  add({"slice", {"src"}, {"dst"},
       {integer("axis", Bound::NonNegative), integer("start", Bound::NonNegative),
        integer("len", Bound::Positive)},
       nullptr, shapeSlice, false, false, "src dims with dims[axis] = len"});
  add({"print", {"src"}, {}, {string("msg")}, nullptr, shapeNone, true, false, "(no output)"});
  add({"fprint", {"src"}, {}, {string("msg"), string("file")}, nullptr, shapeNone, true, false,
       "(no output)"});
  add({"reshape", {"src"}, {"dst"}, {ints("dims", Bound::AtLeastOne, LengthRule::UpToMaxRank)},
       nullptr, shapeReshape, false, false, "dims (same element count)"});
  add({"transpose", {"src"}, {"dst"}, {ints("axes", Bound::NonNegative, LengthRule::Rank)},
       checkTranspose, shapeTranspose, false, false, "dst.dims[i] = src.dims[axes[i]]"});
  add({"concat", {"src1", "src2"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr,
       shapeConcat, false, false, "src1 dims with dims[axis] summed"});
  add({"elew", {"src1", "src2"}, {"dst"}, {oneOf("elew_op", values(kElewOps))}, nullptr,
       shapeElew, false, false, "src1 dims (src2 identical)"});
  add({"relu", {"src"}, {"dst"}, {}, nullptr, shapeSame, false, false, "src dims"});
  add({"lrelu", {"src"}, {"dst"}, {number("negslope")}, nullptr, shapeSame, false, false,
       "src dims"});
  add({"sigmoid", {"src"}, {"dst"}, {}, nullptr, shapeSame, false, false, "src dims"});
  add({"softmax", {"src"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr, shapeAxis,
       false, false, "src dims"});
  add({"conv2d", {"src", "weight", "bias"}, {"dst"},
       {integer("group", Bound::AtLeastOne), pair("size", Bound::AtLeastOne),
        pair("stride", Bound::AtLeastOne), padding(), pair("dilation", Bound::AtLeastOne),
        autopad()},
       nullptr, shapeConv2d, false, false, "[N, out_c, outH, outW]"});
  add({"deconv2d", {"src", "weight", "bias"}, {"dst"},
       {integer("group", Bound::AtLeastOne), pair("size", Bound::AtLeastOne),
        pair("stride", Bound::AtLeastOne), ints("output_dims", Bound::None, LengthRule::Fixed, 4),
        padding(), pair("output_padding", Bound::NonNegative), pair("dilation", Bound::AtLeastOne),
        autopad()},
       nullptr, shapeDeconv2d, false, false, "[N, weight.dims[1]*group, outH, outW]"});
  for (std::string_view pool : {"maxpool2d", "avgpool2d"}) {
    add({pool, {"src"}, {"dst"},
         {pair("size", Bound::AtLeastOne), pair("stride", Bound::AtLeastOne), padding(), autopad()},
         checkPool, shapePool2d, false, false, "[N, C, outH, outW]"});
  }
  add({"batchnorm", {"src", "scale", "offset", "mean", "var"}, {"dst"},
       {number("epsilon", Bound::Positive)}, nullptr, shapeBatchnorm, false, false, "src dims"});
  add({"upsample", {"src"}, {"dst"},
       {oneOf("mode", values(kResizeModes)), numbers("scales", Bound::Positive, LengthRule::Rank)},
       nullptr, shapeUpsample, false, false, "dims[i] = floor(scales[i]*dims[i])"});
  add({"resize", {"src"}, {"dst"},
       {oneOf("mode", values(kResizeModes)), ints("dims", Bound::AtLeastOne, LengthRule::Rank)},
       nullptr, shapeResize, false, false, "dims"});
  add({"maxreduce", {"src"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr,
       shapeMaxreduce, false, false, "src dims with dims[axis] = 1"});
  add({"maxreduce_arg", {"src"}, {"dst", "arg"}, {integer("axis", Bound::NonNegative)}, nullptr,
       shapeMaxreduceArg, false, false, "dst and arg (TL_INT32): src dims with dims[axis] = 1"});
  add({"dot_product", {"src1", "src2"}, {"dst"}, {}, nullptr, shapeDotProduct, false, false,
       "[1]"});
  add({"submean", {"src"}, {"dst"},
       {numbers("mean", Bound::None, LengthRule::Fixed, 3), dtype()}, nullptr, shapeSubmean,
       false, false, "[C, H, W] of dtype"});
  add({"rearange", {"src"}, {"dst"}, {number("start"), number("stop"), number("step")}, nullptr,
       shapeVector, false, false, "src dims (1-D)"});
  add({"pick1d", {"src", "src_index"}, {"dst"},
       {integer("len", Bound::AtLeastOne), integer("stride", Bound::AtLeastOne)}, nullptr,
       shapePick1d, false, false, "[len*stride]"});
  add({"sort1d", {"src_key"}, {"dst_key"}, {oneOf("dir", values(kSortDirs))}, nullptr,
       shapeVector, false, false, "src_key dims (1-D)"});
  // Project extensions.
  add({"matmul", {"src1", "src2"}, {"dst"}, {}, nullptr, shapeMatmul, false, true,
       "NumPy matmul shape"});
  add({"matmul_trans_b", {"src1", "src2"}, {"dst"}, {}, nullptr, shapeMatmulTransB, false, true,
       "NumPy matmul shape of src1 and src2 with its last two axes swapped"});
  add({"matmul_gathered_b", {"src1", "src2", "indices"}, {"dst"}, {boolean("trans_b")}, nullptr,
       shapeMatmulGatheredB, false, true,
       "matmul (matmul_trans_b with trans_b) of src1 and gather_nd(src2, indices, rank - 2)"});
  add({"gemm", {"a", "b", "c"}, {"dst"},
       {number("alpha"), number("beta"), boolean("trans_a"), boolean("trans_b")}, nullptr,
       shapeGemm, false, true, "[M, N]"});
  add({"elew_bcast", {"src1", "src2"}, {"dst"}, {oneOf("elew_op", values(kElewBcastOps))}, nullptr,
       shapeElewBcast, false, true, "broadcast of src1 and src2 dims"});
  add({"clip", {"src"}, {"dst"}, {number("min"), number("max")}, checkClip, shapeSame, false,
       true, "src dims"});
  add({"global_avgpool", {"src"}, {"dst"}, {}, nullptr, shapeGlobalAvgpool, false, true,
       "[N, C, 1, ..., 1]"});
  add({"pad", {"src"}, {"dst"},
       {ints("pads", Bound::NonNegative, LengthRule::TwiceRank), oneOf("mode", values(kPadModes)),
        number("value")},
       nullptr, shapePad, false, true, "dims[i] + pads[i] + pads[i+ndim]"});
  add({"flatten", {"src"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr, shapeFlatten,
       false, true, "[prod(dims[:axis]), prod(dims[axis:])]"});
  add({"cast", {"src"}, {"dst"}, {dtype()}, nullptr, shapeCast, false, true, "src dims, dtype"});
  add({"gather", {"src", "indices"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr, shapeGather,
       false, true, "src.dims[:axis] + indices.dims + src.dims[axis+1:]"});
  add({"unary", {"src"}, {"dst"},
       {oneOf("func", values(kUnaryFuncs)), number("alpha"), number("beta")}, nullptr, shapeUnary,
       false, true, "src dims"});
  add({"compare", {"src1", "src2"}, {"dst"}, {oneOf("compare_op", values(kCompareOps))}, nullptr,
       shapeCompare, false, true, "TL_BOOL, broadcast of src1 and src2 dims"});
  add({"logical", {"src1", "src2"}, {"dst"}, {oneOf("logical_op", values(kLogicalOps))}, nullptr,
       shapeLogical, false, true, "TL_BOOL, broadcast of src1 and src2 dims"});
  add({"where", {"condition", "src1", "src2"}, {"dst"}, {}, nullptr, shapeWhere, false, true,
       "src1 dtype, broadcast of the three dims"});
  add({"reduce", {"src"}, {"dst"},
       {oneOf("reduce_op", values(kReduceOps)), ints("axes", Bound::NonNegative, LengthRule::Any),
        boolean("keepdims")},
       checkAxesUnique, shapeReduce, false, true, "src dims, axes 1 (keepdims) or removed"});
  add({"arg_reduce", {"src"}, {"dst"},
       {oneOf("arg_op", values(kArgOps)), integer("axis", Bound::NonNegative), boolean("keepdims"),
        boolean("select_last_index")},
       nullptr, shapeArgReduce, false, true, "TL_INT64, src dims with axis 1 (keepdims) or removed"});
  add({"cumsum", {"src"}, {"dst"},
       {integer("axis", Bound::NonNegative), boolean("exclusive"), boolean("reverse")}, nullptr, shapeCumsum,
       false, true, "src dims"});
  add({"topk", {"src"}, {"dst", "indices"},
       {integer("axis", Bound::NonNegative), integer("k", Bound::Positive), boolean("largest"), boolean("sorted")},
       nullptr, shapeTopk, false, true, "dst: src dims with dims[axis] = k; indices: TL_INT64, the same dims"});
  add({"layernorm", {"src", "scale", "bias"}, {"dst"},
       {integer("axis", Bound::NonNegative), number("epsilon", Bound::Positive)}, nullptr, shapeLayernorm, false,
       true, "src dims"});
  add({"log_softmax", {"src"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr, shapeAxis, false, true,
       "src dims"});
  add({"strided_slice", {"src"}, {"dst"},
       {ints("starts", Bound::None, LengthRule::Rank), ints("ends", Bound::None, LengthRule::Rank),
        ints("steps", Bound::None, LengthRule::Rank)},
       checkSteps, shapeStridedSlice, false, true, "dims[i] = ceil((ends[i]-starts[i])/steps[i])"});
  add({"expand", {"src"}, {"dst"}, {ints("dims", Bound::AtLeastOne, LengthRule::UpToMaxRank)}, nullptr,
       shapeExpand, false, true, "dims (src broadcasts to them)"});
  add({"tile", {"src"}, {"dst"}, {ints("repeats", Bound::AtLeastOne, LengthRule::Rank)}, nullptr, shapeTile,
       false, true, "dims[i] * repeats[i]"});
  add({"trilu", {"src"}, {"dst"}, {boolean("upper"), integer("k")}, nullptr, shapeTrilu, false, true,
       "src dims"});
  add({"gather_elements", {"src", "indices"}, {"dst"}, {integer("axis", Bound::NonNegative)}, nullptr,
       shapeGatherElements, false, true, "indices dims, src dtype"});
  add({"gather_nd", {"src", "indices"}, {"dst"}, {integer("batch_dims", Bound::NonNegative)}, nullptr,
       shapeGatherNd, false, true, "indices.dims[:-1] + src.dims[batch_dims + indices.dims[-1]:]"});
  add({"scatter_elements", {"src", "indices", "updates"}, {"dst"},
       {integer("axis", Bound::NonNegative), oneOf("reduction", values(kScatterReductions))}, nullptr,
       shapeScatterElements, false, true, "src dims"});
  add({"scatter_nd", {"src", "indices", "updates"}, {"dst"}, {oneOf("reduction", values(kScatterReductions))},
       nullptr, shapeScatterNd, false, true, "src dims"});
  add({"pool", {"src"}, {"dst"},
       {oneOf("pool_op", values(kPoolOps)), ints("size", Bound::AtLeastOne, LengthRule::Any),
        ints("stride", Bound::AtLeastOne, LengthRule::Any), ints("dilation", Bound::AtLeastOne, LengthRule::Any),
        ints("pads", Bound::NonNegative, LengthRule::Any)},
       checkPoolNd, shapePoolNd, false, true, "[N, C, out_1, ..., out_k]"});
  add({"pool_argmax", {"src"}, {"dst"},
       {ints("size", Bound::AtLeastOne, LengthRule::Any), ints("stride", Bound::AtLeastOne, LengthRule::Any),
        ints("dilation", Bound::AtLeastOne, LengthRule::Any), ints("pads", Bound::NonNegative, LengthRule::Any),
        boolean("column_major")},
       checkPoolNd, shapePoolArgmax, false, true, "pool's dims, TL_INT64"});
  add({"conv", {"src", "weight", "bias"}, {"dst"},
       {integer("group", Bound::AtLeastOne), ints("size", Bound::AtLeastOne, LengthRule::Any),
        ints("stride", Bound::AtLeastOne, LengthRule::Any), ints("dilation", Bound::AtLeastOne, LengthRule::Any),
        ints("pads", Bound::NonNegative, LengthRule::Any)},
       checkConvNd, shapeConvNd, false, true, "[N, weight.dims[0], out_1, ..., out_k]"});
  add({"deconv", {"src", "weight", "bias"}, {"dst"},
       {integer("group", Bound::AtLeastOne), ints("size", Bound::AtLeastOne, LengthRule::Any),
        ints("stride", Bound::AtLeastOne, LengthRule::Any), ints("dilation", Bound::AtLeastOne, LengthRule::Any),
        ints("pads", Bound::NonNegative, LengthRule::Any), ints("output_padding", Bound::NonNegative, LengthRule::Any)},
       checkConvNd, shapeDeconvNd, false, true, "[N, weight.dims[1]*group, out_1, ..., out_k]"});
  add({"interpolate", {"src"}, {"dst"},
       {oneOf("mode", values(kInterpolationModes)), oneOf("coordinate_mode", values(kCoordinateModes)),
        oneOf("nearest_mode", values(kNearestModes)), numbers("scales", Bound::Positive, LengthRule::Rank),
        ints("dims", Bound::AtLeastOne, LengthRule::Rank), number("cubic_coeff_a"), boolean("exclude_outside")},
       nullptr, shapeResize, false, true, "dims"});
  add({"grid_sample", {"src", "grid"}, {"dst"},
       {oneOf("mode", values(kInterpolationModes)), oneOf("padding_mode", values(kGridPaddingModes)),
        boolean("align_corners")},
       nullptr, shapeGridSample, false, true, "[N, C, grid.dims[1], ..., grid.dims[k]]"});
  add({"roi_align", {"src", "rois", "batch_indices"}, {"dst"},
       {oneOf("mode", values(kPoolOps)), ints("output_dims", Bound::AtLeastOne, LengthRule::Any),
        integer("sampling_ratio", Bound::NonNegative), number("spatial_scale", Bound::Positive),
        boolean("half_pixel")},
       nullptr, shapeRoiAlign, false, true, "[R, C, output_dims[0], output_dims[1]] for rois [R, 4]"});
  // Collectives: the parts of a multi-device program exchange data (qaic-exec's tensor slicing
  // inserts them, numbering `collective` 0, 1, ... in graph order, the same in every part).
  add({"all_reduce_sum", {"src"}, {"dst"},
       {integer("collective", Bound::NonNegative), integer("parts", Bound::AtLeastOne),
        optionalOneOf("wire", values(kWireFormats))}, nullptr,
       shapeAllReduceSum, false, true, "src dims: the elementwise sum of every part's src"});
  add({"all_gather", {"src"}, {"dst"},
       {integer("axis", Bound::NonNegative), integer("collective", Bound::NonNegative),
        integer("parts", Bound::AtLeastOne), optionalOneOf("wire", values(kWireFormats))},
       nullptr, shapeAllGather, false, true, "src dims with dims[axis] * parts, the parts' src in part order"});
  // Pipeline stages: a tensor computed on one part and read on another moves card to card,
  // sent and received under one `channel` id (numbered 0, 1, ... in the network's order).
  add({"peer_send", {"src"}, {},
       {integer("channel", Bound::NonNegative), integer("peer", Bound::NonNegative),
        integer("parts", Bound::AtLeastOne)},
       nullptr, shapeNone, false, true, "(no output): src goes to part `peer`"});
  add({"peer_receive", {}, {"dst"},
       {integer("channel", Bound::NonNegative), integer("peer", Bound::NonNegative),
        integer("parts", Bound::AtLeastOne), dtype(), ints("dims", Bound::Positive, LengthRule::UpToMaxRank)},
       nullptr, shapeCreate, false, true, "dst: dtype, dims (what part `peer` sent)"});
  // clang-format on
  return specs;
}

}  // namespace

const std::vector<OpSpec>& opSpecs() {
  static const std::vector<OpSpec> specs = buildRegistry();
  return specs;
}

const OpSpec* findOpSpec(std::string_view optype) {
  for (const auto& spec : opSpecs()) {
    if (spec.optype == optype) return &spec;
  }
  return nullptr;
}

}  // namespace qaic::ir
