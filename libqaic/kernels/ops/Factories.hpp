// SPDX-License-Identifier: Apache-2.0
// One factory per optype; KernelRegistry.cpp maps optype names to them.
#pragma once

#include "kernels/ops/Indexing.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

// The function type of a KernelFactory pointer; the factories are declared by source file.
using KernelFactoryFunction = std::unique_ptr<Kernel>(const BuildContext& ctx);
// Creation.cpp
KernelFactoryFunction makeCreate, makeZeros, makeArange;
// DataMovement.cpp (makeReshape also flatten)
KernelFactoryFunction makeSlice, makeReshape, makeTranspose, makeConcat, makePad, makeStridedSlice, makeExpand,
    makeTile, makeTrilu;
// Vector1d.cpp
KernelFactoryFunction makeSubmean, makeRearange, makePick1d, makeSort1d;
// Binary.cpp (makeElew also elew_bcast)
KernelFactoryFunction makeElew, makeCompare, makeLogical, makeWhere;
// Unary.cpp
KernelFactoryFunction makeUnary;
// Elementwise.cpp
KernelFactoryFunction makeRelu, makeLrelu, makeSigmoid, makeClip, makeBatchnorm;
// Reduction.cpp (makeMaxreduce also maxreduce_arg)
KernelFactoryFunction makeMaxreduce, makeDotProduct, makeGlobalAvgpool;
// Reduce.cpp
KernelFactoryFunction makeReduce, makeArgReduce;
// AlongAxis.cpp
KernelFactoryFunction makeCumsum, makeTopk;
// Normalization.cpp
KernelFactoryFunction makeSoftmax, makeLogSoftmax, makeLayernorm;
// Convolution.cpp
KernelFactoryFunction makeConv2d, makeConv, makeDeconv2d, makeDeconv;
// Pooling.cpp
KernelFactoryFunction makePool2d, makePool;
// Resize.cpp (makeResize also upsample)
KernelFactoryFunction makeResize, makeInterpolate;
// GridSample.cpp
KernelFactoryFunction makeGridSample;
// RoiAlign.cpp
KernelFactoryFunction makeRoiAlign;
// PoolArgmax.cpp
KernelFactoryFunction makePoolArgmax;
// Linear.cpp
KernelFactoryFunction makeMatmul, makeMatmulTransB, makeMatmulGatheredB, makeGemm;
// Cast.cpp
KernelFactoryFunction makeCast;
// GatherScatter.cpp
KernelFactoryFunction makeGather, makeGatherElements, makeGatherNd, makeScatterElements, makeScatterNd;
// Print.cpp (makePrint also fprint)
KernelFactoryFunction makePrint;
// Collective.cpp
KernelFactoryFunction makeAllReduceSum, makeAllGather;
// PeerPipe.cpp
KernelFactoryFunction makePeerSend, makePeerReceive;

// The [outer, extent, inner] view around the op's integer param `arg`, which must be an axis
// of `dims`; throws ExecutionError naming the op and param otherwise.
AxisView checkedAxisView(const ir::Op& op, const ir::Dims& dims, std::string_view arg = "axis");

// `index`, read at `position` of input `arg`, resolved against an axis of `extent` (negative
// indices count from the end); throws ExecutionError naming the op, the index and the position.
int64_t resolveIndex(const ir::Op& op, std::string_view arg, int64_t index, int64_t position, int64_t extent);

}  // namespace qaic::kernels::ops
