// SPDX-License-Identifier: Apache-2.0
// The text form of a tensor that print / fprint write (lightnet-ops.md "Element types and
// printing"): nested brackets, one row per line, %.3f / %ld / %d / %lu / %u elements.
#pragma once

#include <string>

#include "ir/Graph.hpp"

namespace qaic::kernels {

// `data` holds elementCount(dims) elements of `dtype`, row-major. Ends with a newline.
std::string formatTensor(ir::DType dtype, const ir::Dims& dims, const void* data);

}  // namespace qaic::kernels
