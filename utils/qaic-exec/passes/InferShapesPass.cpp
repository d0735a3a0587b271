// SPDX-License-Identifier: Apache-2.0
// infer-shapes: every tensor's dtype and dims from the io buffers through the ops (the IR
// library's shape rules; an error names the op).
#include "passes/Passes.hpp"

namespace qaic::compiler {

void inferShapesPass(const Compilation&, Variant& variant) { ir::inferShapes(variant.model.graph); }

}  // namespace qaic::compiler
