// SPDX-License-Identifier: Apache-2.0
// qaic-runner's view of a network's buffers (BatchJson.hpp's NetworkBuffer) for the tests and the
// fuzz target of its batch JSON reader. Header-only: the user has utils/qaic-runner on its
// include path.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "BatchJson.hpp"

namespace qaic::runner::testing {

// A buffer of 4-byte elements; `droppable` sets both skipPartialHeader and allowSkip.
inline NetworkBuffer networkBuffer(std::string name, bool isInput, Dims dims, bool partial = false,
                                   bool droppable = false, std::vector<Dims> allowedShapes = {}) {
  NetworkBuffer b;
  b.name = std::move(name);
  b.isInput = isInput;
  b.elementSize = 4;
  b.dims = std::move(dims);
  b.isPartialAllowed = partial;
  b.skipPartialHeader = droppable;
  b.allowSkip = droppable;
  b.allowedShapes = std::move(allowedShapes);
  return b;
}

}  // namespace qaic::runner::testing
