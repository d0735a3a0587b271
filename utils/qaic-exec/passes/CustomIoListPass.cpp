// SPDX-License-Identifier: Apache-2.0
// custom-io-list: the entries of -custom-IO-list-file, read once for every specialization (the
// custom-io model pass applies them).
#include "CustomIo.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void customIoListPass(Compilation& compilation) {
  const std::string& path = compilation.options.customIoListFile;
  if (!path.empty()) compilation.customIo = readCustomIoList(path);
}

}  // namespace qaic::compiler
