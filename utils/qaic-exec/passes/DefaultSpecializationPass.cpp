// SPDX-License-Identifier: Apache-2.0
// default-specialization: a buffer's full dims are its largest over the specializations; the
// default combination runs the specialization that has exactly those dims (else the first),
// whose graph becomes the program's own.
#include <algorithm>

#include "passes/Passes.hpp"

namespace qaic::compiler {

void defaultSpecializationPass(Compilation& compilation) {
  const std::vector<LoadedModel>& variants = compilation.variants;
  const std::size_t ioCount = variants.front().graph.io.size();
  compilation.fullDims.clear();
  for (std::size_t b = 0; b < ioCount; ++b) {
    ir::Dims dims = variants.front().graph.io[b].dims;
    for (const auto& v : variants) {
      const ir::Dims& other = v.graph.io[b].dims;
      for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = std::max(dims[d], other[d]);
    }
    compilation.fullDims.push_back(std::move(dims));
  }
  compilation.mainVariant = 0;
  for (std::size_t v = variants.size(); v-- > 0;) {
    bool isFull = true;
    for (std::size_t b = 0; b < ioCount; ++b)
      isFull = isFull && variants[v].graph.io[b].dims == compilation.fullDims[b];
    if (isFull) compilation.mainVariant = v;
  }
}

}  // namespace qaic::compiler
