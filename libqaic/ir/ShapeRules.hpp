// SPDX-License-Identifier: Apache-2.0
// Internal: the structural checks and shape rules the registry table points at, and the small
// helpers they share.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "ir/Graph.hpp"
#include "ir/OpError.hpp"

namespace qaic::ir::rules {

using Infos = std::span<const TensorInfo>;
using Outs = std::vector<TensorInfo>;
// The function types of the registry's ShapeRule and StructuralCheck pointers; the rules below
// are declared in groups of one type.
using ShapeRuleFunction = Outs(const Op& op, Infos in);
using StructuralCheckFunction = void(const Op& op);

void requireRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank);
void requireMinRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank);
void requireSameDType(const Op& op, std::string_view arg, const TensorInfo& t, const TensorInfo& reference,
                      std::string_view referenceArg);
void requireDType(const Op& op, std::string_view arg, const TensorInfo& t, DType type);
int64_t axisParam(const Op& op, std::string_view arg, std::size_t rank);  // 0 <= axis < rank
bool representable(DType type, double value);                             // within the dtype's range

// Structural checks (no input shapes needed).
// checkAxesUnique: param 'axes'
// checkSteps: param 'steps': no 0
StructuralCheckFunction checkCreate, checkArange, checkTranspose, checkClip, checkPool, checkAxesUnique, checkSteps,
    checkPoolNd, checkConvNd;

// Creation and printing.
ShapeRuleFunction shapeCreate, shapeArange, shapeNone;
// Data movement.
// shapeVector: 1-D in, same out (rearange, sort1d)
ShapeRuleFunction shapeSame, shapeSlice, shapeReshape, shapeTranspose, shapeConcat, shapeFlatten, shapePad,
    shapeSubmean, shapePick1d, shapeVector, shapeStridedSlice, shapeExpand, shapeTile, shapeTrilu;
// Element-wise and reductions.
// shapeAxis: softmax: same shape, valid axis
ShapeRuleFunction shapeElew, shapeElewBcast, shapeAxis, shapeMaxreduce, shapeMaxreduceArg, shapeDotProduct, shapeUnary,
    shapeCompare, shapeLogical, shapeWhere, shapeReduce, shapeArgReduce, shapeLayernorm, shapeCumsum, shapeTopk;
// Spatial.
// shapeResize: resize, interpolate: param 'dims'
// shapeGridSample: src [N, C, d1..dk], grid [N, o1..ok, k] with k = 1..3 (cubic: k = 2)
// shapePoolArgmax: pool's dims, TL_INT64
// shapeRoiAlign: src [N, C, H, W] floating, rois [R, 4] of src's dtype, batch_indices [R]
ShapeRuleFunction shapeConv2d, shapeDeconv2d, shapePool2d, shapeGlobalAvgpool, shapeBatchnorm, shapeUpsample,
    shapeResize, shapePoolNd, shapeConvNd, shapeDeconvNd, shapeGridSample, shapePoolArgmax, shapeRoiAlign;
// Indexing and conversion.
void requireIndices(const Op& op, std::string_view arg, const TensorInfo& t);  // TL_INT64 / TL_INT32
ShapeRuleFunction shapeGather, shapeCast, shapeGatherElements, shapeGatherNd, shapeScatterElements, shapeScatterNd;
// Linear algebra.
ShapeRuleFunction shapeMatmul, shapeMatmulTransB, shapeMatmulGatheredB, shapeGemm;
// Collectives between the parts of a multi-device program.
// shapeAllReduceSum: src dims, TL_FLOAT or TL_FLOAT16
// shapeAllGather: src dims with dims[axis] * parts
ShapeRuleFunction shapeAllReduceSum, shapeAllGather;

// True for the floating-point dtypes (TL_DOUBLE, TL_FLOAT, TL_FLOAT16).
bool isFloating(DType type);
void requireFloating(const Op& op, std::string_view arg, const TensorInfo& t);

// NumPy multidirectional broadcasting of two shapes; nullopt-like failure throws naming `arg`.
Dims broadcastShapes(const Op& op, std::string_view arg, const Dims& a, const Dims& b);

}  // namespace qaic::ir::rules
