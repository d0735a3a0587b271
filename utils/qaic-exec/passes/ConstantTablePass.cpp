// SPDX-License-Identifier: Apache-2.0
// constant-table: the container's constants, the program's own then those the specializations
// added (shared ones left out), numbered in that order; the summary counts them and their bytes.
#include "passes/Passes.hpp"

namespace qaic::compiler {

void constantTablePass(Compilation& compilation) {
  std::vector<container::QpcConstant>& table = compilation.contents.constants;
  table = compilation.constants.constants;
  for (const auto& extra : compilation.extraConstants)
    for (const auto& c : extra.constants)
      if (!c.tensor.name.empty()) table.push_back(c);
  compilation.summary.constants = table.size();
  compilation.summary.constantBytes = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    table[i].index = static_cast<uint32_t>(i);
    compilation.summary.constantBytes += table[i].storedSize();
  }
}

}  // namespace qaic::compiler
