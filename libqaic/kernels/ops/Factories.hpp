// One factory per optype; KernelRegistry.cpp maps optype names to them.
#pragma once

#include "kernels/ops/Indexing.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

#define QAIC_KERNEL(name) std::unique_ptr<Kernel> name(const BuildContext& ctx)
// Creation.cpp
QAIC_KERNEL(makeCreate);
QAIC_KERNEL(makeZeros);
QAIC_KERNEL(makeArange);
// DataMovement.cpp
QAIC_KERNEL(makeSlice);
QAIC_KERNEL(makeReshape);  // also flatten
QAIC_KERNEL(makeTranspose);
QAIC_KERNEL(makeConcat);
QAIC_KERNEL(makePad);
QAIC_KERNEL(makeStridedSlice);
QAIC_KERNEL(makeExpand);
QAIC_KERNEL(makeTile);
QAIC_KERNEL(makeTrilu);
// Vector1d.cpp
QAIC_KERNEL(makeSubmean);
QAIC_KERNEL(makeRearange);
QAIC_KERNEL(makePick1d);
QAIC_KERNEL(makeSort1d);
// Binary.cpp
QAIC_KERNEL(makeElew);  // also elew_bcast
QAIC_KERNEL(makeCompare);
QAIC_KERNEL(makeLogical);
QAIC_KERNEL(makeWhere);
// Unary.cpp
QAIC_KERNEL(makeUnary);
// Elementwise.cpp
QAIC_KERNEL(makeRelu);
QAIC_KERNEL(makeLrelu);
QAIC_KERNEL(makeSigmoid);
QAIC_KERNEL(makeClip);
QAIC_KERNEL(makeBatchnorm);
// Reduction.cpp
QAIC_KERNEL(makeMaxreduce);  // also maxreduce_arg
QAIC_KERNEL(makeDotProduct);
QAIC_KERNEL(makeGlobalAvgpool);
// Reduce.cpp
QAIC_KERNEL(makeReduce);
QAIC_KERNEL(makeArgReduce);
// Normalization.cpp
QAIC_KERNEL(makeSoftmax);
QAIC_KERNEL(makeLogSoftmax);
QAIC_KERNEL(makeLayernorm);
// Convolution.cpp
QAIC_KERNEL(makeConv2d);
QAIC_KERNEL(makeDeconv2d);
// Pooling.cpp
QAIC_KERNEL(makePool2d);
QAIC_KERNEL(makePool);
// Resize.cpp
QAIC_KERNEL(makeResize);  // also upsample
QAIC_KERNEL(makeInterpolate);
// Linear.cpp
QAIC_KERNEL(makeMatmul);
QAIC_KERNEL(makeGemm);
// Cast.cpp
QAIC_KERNEL(makeCast);
// GatherScatter.cpp
QAIC_KERNEL(makeGather);
QAIC_KERNEL(makeGatherElements);
QAIC_KERNEL(makeGatherNd);
QAIC_KERNEL(makeScatterElements);
QAIC_KERNEL(makeScatterNd);
// Print.cpp
QAIC_KERNEL(makePrint);  // also fprint
#undef QAIC_KERNEL

// The [outer, extent, inner] view around the op's integer param `arg`, which must be an axis
// of `dims`; throws ExecutionError naming the op and param otherwise.
AxisView checkedAxisView(const ir::Op& op, const ir::Dims& dims, std::string_view arg = "axis");

// `index`, read at `position` of input `arg`, resolved against an axis of `extent` (negative
// indices count from the end); throws ExecutionError naming the op, the index and the position.
int64_t resolveIndex(const ir::Op& op, std::string_view arg, int64_t index, int64_t position, int64_t extent);

}  // namespace qaic::kernels::ops
