// SPDX-License-Identifier: Apache-2.0
// cast-placement: after retained-state, in every specialization, the precision conversions where
// they cost least (CastPlacement.hpp): with -convert-to-fp16, retained state held in float16
// updated in that type, in place, and constants that are only selected from (embeddings) kept
// float16; then every float16-to-float cast below the data movement its values go through, and
// matmuls reading a float16 right operand (transposed or not) without a widened copy.
#include "CastPlacement.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void castPlacementPass(Compilation& compilation) {
  const bool narrowState = compilation.options.retainedState && compilation.options.convertToFp16;
  const std::vector<RetainedPair> pairs = narrowState ? findRetainedPairs(compilation.variants.front().graph)
                                                      : std::vector<RetainedPair>{};
  for (LoadedModel& variant : compilation.variants) {
    if (!pairs.empty()) keepRetainedInBufferPrecision(variant.graph, pairs);
    if (compilation.options.convertToFp16) keepSelectedConstantsNarrow(variant.graph);
    sinkWideningCasts(variant.graph);
    readNarrowMatmulOperands(variant.graph);
  }
}

}  // namespace qaic::compiler
