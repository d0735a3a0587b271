// SPDX-License-Identifier: Apache-2.0
// partition-config: the multi-device partition config this compile uses, read and checked first
// so a bad config fails before any model work: -mdp-load-partition-config's file, else
// -mdp-pipeline-stages=N's stages (N >= 2), else one device with -aic-num-cores NSPs. A config of
// several devices makes a multi-device program: tensor slicing for one partition of several
// devices, pipeline stages for several partitions (tensor-slicing, pipeline-stages, device-parts).
#include "CompileError.hpp"
#include "PartitionConfig.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void partitionConfigPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  if (!options.partitionConfig.empty())
    compilation.partitionConfig = readPartitionConfig(options.partitionConfig);
  else if (options.pipelineStages >= 2)
    compilation.partitionConfig = pipelinePartitionConfig(options.pipelineStages, options.numCores);
  else
    compilation.partitionConfig = uniformPartitionConfig(1, options.numCores);
  compilation.summary.partitionDevices = compilation.partitionConfig.deviceCount();
}

}  // namespace qaic::compiler
