// SPDX-License-Identifier: Apache-2.0
#include "Compiler.hpp"

#include "Compilation.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

// What each specialization's network goes through, in order (load-specializations runs them).
constexpr ModelPass kModelPasses[] = {
    {"load-model", loadModelPass},
    {"network-checks", networkChecksPass},
    {"batch-size", batchSizePass},
    {"infer-shapes", inferShapesPass},
    {"custom-io", customIoPass},
    {"fp16-io-formats", fp16IoFormatsPass},
    {"exchangeable-io", exchangeableIoPass},
    {"specialization-io", specializationIoPass},
};

// A device's part: its default dims and retained state from its own graphs, then its container.
constexpr CompilePass kPartShapePasses[] = {
    {"default-specialization", defaultSpecializationPass},
    {"retained-state", retainedStatePass},
};
constexpr CompilePass kPartContainerPasses[] = {
    {"pack-constants", packConstantsPass},
    {"io-layout", ioLayoutPass},
    {"specialization-payloads", specializationPayloadsPass},
    {"constant-table", constantTablePass},
    {"program", programPass},
};

// compile(), in order: the partition config, the side files, the networks, then the container
// piece by piece (with a partition config of several devices, part 0's, then the others').
constexpr CompilePass kCompilePasses[] = {
    {"partition-config", partitionConfigPass},
    {"specialization-config", specializationConfigPass},
    {"custom-io-list", customIoListPass},
    {"load-specializations", [](Compilation& c) { loadSpecializationsPass(c, kModelPasses); }},
    {"default-specialization", defaultSpecializationPass},
    {"retained-state", retainedStatePass},
    {"cast-placement", castPlacementPass},
    {"tensor-slicing", tensorSlicingPass},
    {"pipeline-stages", pipelineStagesPass},
    {"pack-constants", packConstantsPass},
    {"io-layout", ioLayoutPass},
    {"specialization-payloads", specializationPayloadsPass},
    {"constant-table", constantTablePass},
    {"program", programPass},
    {"device-parts", devicePartsPass},
    {"write-container", writeContainerPass},
    {"dump-partition-config", dumpPartitionConfigPass},
};

}  // namespace

std::span<const CompilePass> compilePasses() { return kCompilePasses; }
std::span<const ModelPass> modelPasses() { return kModelPasses; }
std::span<const CompilePass> partShapePasses() { return kPartShapePasses; }
std::span<const CompilePass> partContainerPasses() { return kPartContainerPasses; }

void shapeParts(Compilation& compilation, std::vector<std::vector<LoadedModel>> byPart) {
  compilation.variants = std::move(byPart[0]);
  compilation.contents.retainedState.clear();
  for (const CompilePass& pass : partShapePasses()) pass.run(compilation);
  compilation.otherParts.clear();
  for (std::size_t p = 1; p < byPart.size(); ++p) {
    auto part = std::make_unique<Compilation>(compilation.options);
    part->specializations = compilation.specializations;
    part->customIo = compilation.customIo;
    part->variants = std::move(byPart[p]);
    for (const CompilePass& pass : partShapePasses()) pass.run(*part);
    compilation.otherParts.push_back(std::move(part));
  }
}

CompileSummary compile(const ExecOptions& options) {
  Compilation compilation(options);
  for (const CompilePass& pass : kCompilePasses) pass.run(compilation);
  return compilation.summary;
}

}  // namespace qaic::compiler
