// SPDX-License-Identifier: Apache-2.0
// program: the container's one program entry (its IO region, semaphores, memory needs, payloads,
// the indices of the buffers the IO layout placed).
#include <algorithm>
#include <filesystem>

#include "IoLayout.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

uint64_t activationBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const auto& [name, info] : graph.tensors) {
    total += static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
  }
  return total;
}

std::string programName(const std::string& modelPath) {
  std::string stem = std::filesystem::path(modelPath).stem().string();
  return stem.empty() ? "program" : stem;
}

std::span<const std::byte> bytesOf(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

}  // namespace

void programPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  // Activations: the most any compiled payload needs (one runs at a time).
  uint64_t activations = 0;
  for (const auto& payload : compilation.payloads)
    activations = std::max(activations, activationBytes(compilation.variants[payload.variant].graph));

  container::QpcProgram program;
  program.name = programName(options.model);
  program.numCores = options.numCores;
  // What qaic-runner reports as BatchSize (and multiplies Inf/Sec by): -stats-batchsize when the
  // samples per inference are not dim 0's, else -batchsize.
  const auto batchSize = static_cast<uint32_t>(options.batchSize > 0 ? options.batchSize : 1);
  program.batchSize = options.statsBatchSize > 0 ? options.statsBatchSize : batchSize;
  program.numSemaphores = 1;
  program.doneSemaphore = 0;
  program.flags = options.convertToFp16 ? container::kProgramFlagFp16Constants : 0;
  program.ioRegionSize = compilation.ioRegionSize;
  program.doorbellAddress = kDoorbellAddress;
  program.requestDescriptorOffset = kRequestDescriptorOffset;
  program.responseDescriptorOffset = kResponseDescriptorOffset;
  uint64_t retainedBytes = 0;
  for (const auto& entry : compilation.contents.retainedState) retainedBytes += entry.size;
  program.totalRequiredMemory = compilation.ioRegionSize + compilation.summary.constantBytes + activations +
                                retainedBytes;
  for (const auto& buffer : compilation.contents.buffers) program.bufferIndices.push_back(buffer.index);
  // The spans point into compilation.payloads, which no pass changes after this one.
  program.payload = bytesOf(compilation.payloads[0].json);
  for (std::size_t p = 1; p < compilation.payloads.size(); ++p) {
    const auto& payload = compilation.payloads[p];
    compilation.contents.specializationPayloads.push_back({0, payload.combination, bytesOf(payload.json)});
  }
  compilation.contents.programs.push_back(program);
}

}  // namespace qaic::compiler
