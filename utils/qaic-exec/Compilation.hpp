// SPDX-License-Identifier: Apache-2.0
// What qaic-exec's passes share: one Compilation holds the options and everything the passes
// have produced so far, each pass reading what earlier ones left and adding its own part. A pass
// is a plain function with a name; compile() (Compiler.cpp) runs them from an ordered table.
//
// Two kinds of pass: a CompilePass works on the whole compilation; a ModelPass takes one
// specialization's network (a Variant) from loading to its checked io formats, and the
// load-specializations pass runs the model passes once per entry of
// -network-specialization-config (once in all without one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Compiler.hpp"
#include "ConstantPacker.hpp"
#include "CustomIo.hpp"
#include "ExecOptions.hpp"
#include "ModelLoader.hpp"
#include "PartitionConfig.hpp"
#include "RetainedState.hpp"
#include "SpecializationConfig.hpp"
#include "base/MappedFile.hpp"
#include "container/QpcModel.hpp"
#include "ir/Graph.hpp"
#include "partition/TensorSlicing.hpp"

namespace qaic::compiler {

struct Compilation {
  explicit Compilation(const ExecOptions& execOptions) : options(execOptions) {}

  const ExecOptions& options;

  // partition-config: the devices the compile is for (dump-partition-config writes it).
  PartitionConfig partitionConfig;

  // specialization-config, custom-io-list: the side files, read once.
  std::vector<Specialization> specializations;  // empty without -network-specialization-config
  std::vector<CustomIoEntry> customIo;          // empty without -custom-IO-list-file

  // load-specializations: one network per specialization (one in all without a config), with
  // the same io buffers in the same order.
  std::vector<LoadedModel> variants;

  // default-specialization: each buffer's largest dims over the specializations, and the
  // variant that has exactly those (else the first): the program's own graph.
  std::vector<ir::Dims> fullDims;  // by io index
  std::size_t mainVariant = 0;

  // retained-state: which io buffers stay on the device (their entries go into contents).
  std::vector<bool> retained;  // by io index, every buffer (all false without -retained-state)

  // tensor-slicing: with a partition config of N >= 2 devices, every specialization's network
  // is split into N (the same split in each); `variants` then holds part 0's networks, the
  // compilation itself builds part 0, and parts 1..N-1 are compilations of their own, shaped
  // here and built by device-parts. By part: what it moves between cards per inference (at the
  // default specialization's dims).
  std::vector<std::unique_ptr<Compilation>> otherParts;
  std::vector<partition::PeerTraffic> partTraffic;
  // device-parts: the nested containers of parts 1..N-1 (contents.deviceParts spans into them),
  // each written to a file in the output directory, mapped, and unlinked at once: page cache
  // rather than heap, however large a part.
  std::vector<MappedFile> partImages;

  // pack-constants, specialization-payloads: the main variant's constants, then those of the
  // other specializations (a shared one with its name cleared). Spans into their storage stay
  // valid while the Compilation lives.
  PackedConstants constants;
  std::vector<PackedConstants> extraConstants;

  // io-layout: the IO region's size at full dims (its buffers go into contents.buffers).
  uint64_t ioRegionSize = 0;

  // specialization-payloads: [0] the program's own, then one per specialization payload.
  struct Payload {
    std::string json;         // JSON IR
    std::size_t variant = 0;  // the variant it was compiled from
    // 1-based index in contents.allowedShapes of the combination it serves; 0 for the program's
    // own, which serves the default.
    uint32_t combination = 0;
  };
  std::vector<Payload> payloads;

  // What goes into programqpc.bin, filled in by several passes; write-container writes it.
  container::QpcContents contents;

  CompileSummary summary;
};

// One specialization's network on its way through the model passes.
struct Variant {
  std::size_t index = 0;                       // its entry in the config (0 without one)
  std::map<std::string, int64_t> onnxSymbols;  // -onnx-define-symbol with the entry's bindings
  LoadedModel model;                           // set by the load-model pass
};

struct CompilePass {
  std::string_view name;
  void (*run)(Compilation& compilation);
};

struct ModelPass {
  std::string_view name;
  // The compilation holds the options, the side files and the specializations loaded before.
  void (*run)(const Compilation& compilation, Variant& variant);
};

// The ordered tables compile() runs (Compiler.cpp); their names are for diagnostics and tests.
std::span<const CompilePass> compilePasses();
std::span<const ModelPass> modelPasses();
// A device's part of a multi-device program is built by the same passes as a whole program:
// first those that derive the default dims and the retained state from its (split) graphs, then
// those that write its container's contents. compilePasses() runs both for part 0;
// tensor-slicing and device-parts run them for the other parts.
std::span<const CompilePass> partShapePasses();
std::span<const CompilePass> partContainerPasses();

// Makes `compilation` part 0 of a multi-device program and `otherParts` the rest, `byPart[p]`
// being part p's specializations (tensor-slicing's or pipeline-stages' split), and runs
// partShapePasses() over each. The unsplit program's retained-state entries are dropped first:
// each part derives its own.
void shapeParts(Compilation& compilation, std::vector<std::vector<LoadedModel>> byPart);

}  // namespace qaic::compiler
