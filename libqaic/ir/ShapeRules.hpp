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

void requireRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank);
void requireMinRank(const Op& op, std::string_view arg, const TensorInfo& t, std::size_t rank);
void requireSameDType(const Op& op, std::string_view arg, const TensorInfo& t, const TensorInfo& reference,
                      std::string_view referenceArg);
void requireDType(const Op& op, std::string_view arg, const TensorInfo& t, DType type);
int64_t axisParam(const Op& op, std::string_view arg, std::size_t rank);  // 0 <= axis < rank
bool representable(DType type, double value);                             // within the dtype's range

// Structural checks (no input shapes needed).
void checkCreate(const Op& op);
void checkArange(const Op& op);
void checkTranspose(const Op& op);
void checkClip(const Op& op);
void checkPool(const Op& op);
void checkAxesUnique(const Op& op);  // param 'axes'
void checkSteps(const Op& op);       // param 'steps': no 0
void checkPoolNd(const Op& op);

// Creation and printing.
Outs shapeCreate(const Op& op, Infos in);
Outs shapeArange(const Op& op, Infos in);
Outs shapeNone(const Op& op, Infos in);
// Data movement.
Outs shapeSame(const Op& op, Infos in);
Outs shapeSlice(const Op& op, Infos in);
Outs shapeReshape(const Op& op, Infos in);
Outs shapeTranspose(const Op& op, Infos in);
Outs shapeConcat(const Op& op, Infos in);
Outs shapeFlatten(const Op& op, Infos in);
Outs shapePad(const Op& op, Infos in);
Outs shapeSubmean(const Op& op, Infos in);
Outs shapePick1d(const Op& op, Infos in);
Outs shapeVector(const Op& op, Infos in);  // 1-D in, same out (rearange, sort1d)
Outs shapeStridedSlice(const Op& op, Infos in);
Outs shapeExpand(const Op& op, Infos in);
Outs shapeTile(const Op& op, Infos in);
Outs shapeTrilu(const Op& op, Infos in);
// Element-wise and reductions.
Outs shapeElew(const Op& op, Infos in);
Outs shapeElewBcast(const Op& op, Infos in);
Outs shapeAxis(const Op& op, Infos in);  // softmax: same shape, valid axis
Outs shapeMaxreduce(const Op& op, Infos in);
Outs shapeMaxreduceArg(const Op& op, Infos in);
Outs shapeDotProduct(const Op& op, Infos in);
Outs shapeUnary(const Op& op, Infos in);
Outs shapeCompare(const Op& op, Infos in);
Outs shapeLogical(const Op& op, Infos in);
Outs shapeWhere(const Op& op, Infos in);
Outs shapeReduce(const Op& op, Infos in);
Outs shapeArgReduce(const Op& op, Infos in);
Outs shapeLayernorm(const Op& op, Infos in);
// Spatial.
Outs shapeConv2d(const Op& op, Infos in);
Outs shapeDeconv2d(const Op& op, Infos in);
Outs shapePool2d(const Op& op, Infos in);
Outs shapeGlobalAvgpool(const Op& op, Infos in);
Outs shapeBatchnorm(const Op& op, Infos in);
Outs shapeUpsample(const Op& op, Infos in);
Outs shapeResize(const Op& op, Infos in);  // resize, interpolate: param 'dims'
Outs shapePoolNd(const Op& op, Infos in);
// Indexing and conversion.
void requireIndices(const Op& op, std::string_view arg, const TensorInfo& t);  // TL_INT64 / TL_INT32
Outs shapeGather(const Op& op, Infos in);
Outs shapeCast(const Op& op, Infos in);
Outs shapeGatherElements(const Op& op, Infos in);
Outs shapeGatherNd(const Op& op, Infos in);
Outs shapeScatterElements(const Op& op, Infos in);
Outs shapeScatterNd(const Op& op, Infos in);
// Linear algebra.
Outs shapeMatmul(const Op& op, Infos in);
Outs shapeGemm(const Op& op, Infos in);

// True for the floating-point dtypes (TL_DOUBLE, TL_FLOAT, TL_FLOAT16).
bool isFloating(DType type);
void requireFloating(const Op& op, std::string_view arg, const TensorInfo& t);

// NumPy multidirectional broadcasting of two shapes; nullopt-like failure throws naming `arg`.
Dims broadcastShapes(const Op& op, std::string_view arg, const Dims& a, const Dims& b);

}  // namespace qaic::ir::rules
