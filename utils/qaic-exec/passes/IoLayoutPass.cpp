// SPDX-License-Identifier: Apache-2.0
// io-layout: the IO region (IoLayout.hpp) holds every buffer at its full dims, the largest any
// specialization exchanges; retained buffers take no place in it.
#include "IoLayout.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void ioLayoutPass(Compilation& compilation) {
  const ir::Graph& program = compilation.variants[compilation.mainVariant].graph;
  ir::Graph atFullDims;  // layoutIo reads only the io and the source name
  atFullDims.sourceName = program.sourceName;
  atFullDims.io = program.io;
  for (std::size_t b = 0; b < atFullDims.io.size(); ++b) {
    atFullDims.io[b].dims = compilation.fullDims[b];
  }
  IoLayout layout = layoutIo(atFullDims, compilation.retained);
  compilation.contents.buffers = std::move(layout.buffers);
  compilation.ioRegionSize = layout.ioRegionSize;
}

}  // namespace qaic::compiler
