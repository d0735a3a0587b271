// SPDX-License-Identifier: Apache-2.0
// fp16-io-formats: with -convert-to-fp16, the io buffers' device formats (Fp16IoFormats.hpp).
// After custom-io: a buffer the list gave its own precision keeps the flat format it got there.
#include "Fp16IoFormats.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void fp16IoFormatsPass(const Compilation& compilation, Variant& variant) {
  if (!compilation.options.convertToFp16) return;
  chooseFp16IoFormats(variant.model.graph, compilation.options.fp16IoLayout);
}

}  // namespace qaic::compiler
