// SPDX-License-Identifier: Apache-2.0
// partition-config: the multi-device partition config this compile uses, read and checked first
// so a bad config fails before any model work: -mdp-load-partition-config's file, else one
// device with -aic-num-cores NSPs (-mdp-pipeline-stages=1 is that too). A config of several
// devices makes a multi-device program (tensor-slicing, device-parts). Pipelining is not
// implemented, so -mdp-pipeline-stages=N >= 2 is refused rather than compiled as something else.
#include "CompileError.hpp"
#include "PartitionConfig.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void partitionConfigPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  if (options.pipelineStages >= 2)
    throw CompileError("-mdp-pipeline-stages=" + std::to_string(options.pipelineStages) +
                       ": pipelining (consecutive parts of the graph on consecutive devices) is not "
                       "implemented; split the network by tensor slicing with "
                       "-mdp-load-partition-config, or use -mdp-pipeline-stages=1");
  if (!options.partitionConfig.empty())
    compilation.partitionConfig = readPartitionConfig(options.partitionConfig);
  else
    compilation.partitionConfig = uniformPartitionConfig(1, options.numCores);
  compilation.summary.partitionDevices = compilation.partitionConfig.deviceCount();
}

}  // namespace qaic::compiler
