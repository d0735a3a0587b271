// SPDX-License-Identifier: Apache-2.0
// -convert-to-fp16's device formats for the network's io buffers (seed 003): an image-like input
// (rank 1-4, read by a convolution directly or through reshapes as the same channels over space,
// e.g. a Conv1d's [N, C, L]) lives on the device in DWHC (or, transposed, DHWC) FP16, other float
// inputs in flat FP16 (the fully connected block's 1-D arrays); float outputs of rank 4, or of rank
// 1-3 made by a convolution, come back from DWHC float, other outputs flat float. Integer buffers
// keep their type and layout.
#pragma once

#include "ir/Graph.hpp"

namespace qaic::compiler {

enum class Fp16IoLayout {
  DWHC,  // seed 003's default
  DHWC,  // seed 003's transpose_weight layout
  Flat,  // every buffer flat in the user's type, as without the conversion (constants still FP16)
};

// Sets graph.io[i].deviceFormat for -convert-to-fp16. A buffer whose format the network already
// declares (anything but flat in the user's own type) keeps it.
void chooseFp16IoFormats(ir::Graph& graph, Fp16IoLayout layout);

}  // namespace qaic::compiler
