// SPDX-License-Identifier: Apache-2.0
// qaic-util create's command line and where the partition's size comes from: a resource JSON
// file (the vendor's resource-group fields), a program container (what N activations of its
// first program need) or explicit counts.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qaicd/Protocol.hpp"

namespace qaic::util {

struct CreateOptions {
  std::optional<unsigned> device;  // -d ID; absent: the first device with room
  // A group, one partition on each device, made together or not at all: -d ID,ID,... lists the
  // devices, --device-count N takes the first N with room. Empty / 0: a single partition.
  std::vector<uint32_t> devices;
  uint32_t deviceCount = 0;
  qaicd::Resources resources;
  std::string label;                 // --label L
  std::vector<std::string> command;  // after "--": run inside the partition, then release
};

// Throws UsageError naming the option, the file or the field (exit status 2).
CreateOptions parseCreateOptions(std::span<const std::string> args);

// The resources of a JSON object file with the keys numNsp, numMcid, numSem, numVc, ddrSize
// (bytes); l2Region is accepted and ignored (the emulated device has no L2 regions).
qaicd::Resources readResourceFile(const std::string& path);

}  // namespace qaic::util
