// SPDX-License-Identifier: Apache-2.0
// custom-io: the buffers -custom-IO-list-file lists take their precision (CustomIo.hpp).
#include "CustomIo.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void customIoPass(const Compilation& compilation, Variant& variant) {
  if (compilation.customIo.empty()) return;
  applyCustomIo(variant.model.graph, compilation.customIo, compilation.options.customIoListFile);
}

}  // namespace qaic::compiler
