// SPDX-License-Identifier: Apache-2.0
// partition-config: the multi-device partition config this compile uses, read and checked first
// so a bad config fails before any model work: -mdp-load-partition-config's file, the config of
// -mdp-pipeline-stages=N, else one device with -aic-num-cores NSPs. The program is still built
// for one device; the config is what -mdp-dump-partition-config writes.
#include "PartitionConfig.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void partitionConfigPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  if (!options.partitionConfig.empty())
    compilation.partitionConfig = readPartitionConfig(options.partitionConfig);
  else
    compilation.partitionConfig = uniformPartitionConfig(options.pipelineStages == 0 ? 1 : options.pipelineStages,
                                                         options.numCores);
  compilation.summary.partitionDevices = compilation.partitionConfig.deviceCount();
}

}  // namespace qaic::compiler
