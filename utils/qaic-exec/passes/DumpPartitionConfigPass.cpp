// SPDX-License-Identifier: Apache-2.0
// dump-partition-config: -mdp-dump-partition-config=FILE gets the config the compile used. It
// runs after write-container, so a failed compile leaves no config behind either.
#include "PartitionConfig.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void dumpPartitionConfigPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  if (options.dumpPartitionConfig.empty()) return;
  writePartitionConfig(options.dumpPartitionConfig, compilation.partitionConfig);
}

}  // namespace qaic::compiler
