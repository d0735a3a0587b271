// SPDX-License-Identifier: Apache-2.0
// The --aic-batch-json-input file (seed 000): IO sets of IO entries, validated against the
// network's buffers before anything runs. File contents are not read here: inputs are loaded on
// demand when their IO set is submitted, so memory stays bounded however many sets the file has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <qaic/IoValidation.hpp>

namespace qaic::runner {

using Dims = qaic::rt::IoDims;
// What the runner knows of one network buffer (from Qpc::getBufferMappingsV2). Dims are checked
// by libqaic's validateBuffer / validateIoSet, the same code InferenceSet::submit runs.
using NetworkBuffer = qaic::rt::BufferShapeRules;

struct IoEntry {
  std::string path;  // resolved: absolute, or relative to the JSON file's directory
  std::size_t networkIndex = 0;
  bool isInput = true;
  std::size_t elementSize = 0;
  Dims dims;  // as given, or the network's default
  bool skipValidation = false;
  std::size_t bytes() const;  // product(dims) * elementSize
};

struct IoSet {
  // One slot per network buffer, in network order; empty when the buffer is dropped.
  std::vector<std::optional<IoEntry>> buffers;
  int specialization = -1;  // the allowed shape combination this set uses, -1 if not specialized
};

struct BatchSpec {
  std::string sourcePath;
  std::vector<IoSet> sets;
};

// A malformed batch file: one line naming the file, IO set index, entry index and field.
class BatchJsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BatchJsonOptions {
  bool checkOutputs = false;  // -c: output files (not skip-validation) must exist with the right size
};

// The seed's data-type strings and their sizes ("float" -> 4); nullopt for unknown strings.
std::optional<std::size_t> batchDataTypeSize(const std::string& dataType);

BatchSpec loadBatchJson(const std::string& path, const std::vector<NetworkBuffer>& network,
                        const BatchJsonOptions& options);

// Same, from text already in memory (baseDir resolves relative paths); used by the fuzzer.
BatchSpec parseBatchJson(const std::string& text, const std::string& sourcePath, const std::string& baseDir,
                         const std::vector<NetworkBuffer>& network, const BatchJsonOptions& options);

}  // namespace qaic::runner
