// SPDX-License-Identifier: Apache-2.0
// device-parts: a multi-device program's parts. Part p runs on the partition config's p-th device
// (PartitionConfig::partDevices: a pipeline's last stage first) with that device's NSPs. Parts
// 1..N-1 are built by the same container passes as part 0 (the compilation itself) and nested
// whole, each a single-device container with its own IO descriptor, constants and retained
// state; the device_parts entries carry each part's figures for qaic-util --qpc: its constant
// bytes, its retained bytes per activation and what it moves between cards per inference
// (TensorSlicing.hpp's peerTraffic or the pipeline's transfers, at the default dims).
#include <unistd.h>

#include <filesystem>

#include "CompileError.hpp"
#include "container/QpcWriter.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

// Part `part`'s container, written next to the output (programqpc.bin's directory, created here
// as write-container would) and mapped; the file is unlinked once mapped, so nothing is left
// behind whether the compile goes on or fails.
MappedFile writePartImage(const Compilation& part, const std::string& binaryDir, std::size_t index) {
  createOutputDirectory(binaryDir);
  const std::string path = (std::filesystem::path(binaryDir) /
                            (".programqpc.part" + std::to_string(index) + "." + std::to_string(::getpid()) + ".bin"))
                               .string();
  container::writeQpcFile(path, part.contents);
  Result<MappedFile> mapped = MappedFile::openReadOnly(path);
  ::unlink(path.c_str());
  if (!mapped) throw CompileError(path + ": cannot map part " + std::to_string(index) + ": " + mapped.message());
  return std::move(mapped).value();
}

uint64_t retainedBytes(const container::QpcContents& contents) {
  uint64_t total = 0;
  for (const auto& entry : contents.retainedState) total += entry.size;
  return total;
}

}  // namespace

void devicePartsPass(Compilation& compilation) {
  const std::size_t parts = compilation.partitionConfig.deviceCount();
  if (parts < 2) return;
  const std::vector<PartitionDevice> devices = compilation.partitionConfig.partDevices();
  container::QpcContents& contents = compilation.contents;
  CompileSummary& summary = compilation.summary;
  summary.deviceParts.clear();
  compilation.partImages.clear();
  compilation.partImages.reserve(parts - 1);

  for (std::size_t p = 0; p < parts; ++p) {
    Compilation& part = p == 0 ? compilation : *compilation.otherParts[p - 1];
    if (p > 0) {
      for (const CompilePass& pass : partContainerPasses()) pass.run(part);
    }
    part.contents.programs.front().numCores = devices[p].numCores;
    CompileSummary::DevicePart figures;
    figures.deviceId = devices[p].deviceId;
    figures.numCores = devices[p].numCores;
    figures.weightBytes = part.summary.constantBytes;
    figures.retainedBytes = retainedBytes(part.contents);
    figures.sentBytes = compilation.partTraffic[p].sent;
    figures.receivedBytes = compilation.partTraffic[p].received;
    summary.deviceParts.push_back(figures);

    container::QpcDevicePart entry;
    entry.slot = figures.deviceId;
    entry.numCores = figures.numCores;
    entry.weightBytes = figures.weightBytes;
    entry.retainedBytes = figures.retainedBytes;
    entry.sentBytes = figures.sentBytes;
    entry.receivedBytes = figures.receivedBytes;
    if (p > 0) {
      compilation.partImages.push_back(writePartImage(part, compilation.options.binaryDir, p));
      entry.image = std::span<const std::byte>(compilation.partImages.back().data(),
                                               compilation.partImages.back().size());
    }
    contents.deviceParts.push_back(entry);
  }
  contents.partitionConfig = partitionConfigJson(compilation.partitionConfig);
  contents.connection = container::DeviceConnection::P2p;
  compilation.otherParts.clear();  // their containers are written; what they own is no longer read
}

}  // namespace qaic::compiler
