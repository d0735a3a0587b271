// SPDX-License-Identifier: Apache-2.0
// Where each inference's inputs come from: random data (no input option), raw files (-i), or the
// IO sets of a batch JSON, round robin. Batch inputs are read through the FileCache when their
// set is prepared, never all at once.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <qaic/Qpc.hpp>

#include "BatchJson.hpp"
#include "FileCache.hpp"

namespace qaic::runner {

// One IO set ready to submit; the shared_ptrs keep the input bytes alive while in flight.
struct PreparedSet {
  std::size_t setIndex = 0;
  std::vector<FileBytes> inputs;           // per network buffer; null for outputs and dropped
  std::vector<bool> present;               // per network buffer
  std::vector<std::optional<Dims>> dims;   // per network buffer, when the set gives dims
  std::vector<std::string> expectedPaths;  // per output buffer checked by -c, else empty
};

class InputSource {
 public:
  // `unbound`: values over the whole range of each type (--unbound-random), else floats in [0, 1)
  // and integers in [0, 16).
  static std::unique_ptr<InputSource> random(const qaic::rt::v2::BufferMappings& mappings, bool unbound = false);
  // Throws std::runtime_error naming the file and buffer when counts or sizes disagree.
  static std::unique_ptr<InputSource> files(const qaic::rt::v2::BufferMappings& mappings,
                                            const std::vector<std::string>& paths, FileCache& cache);
  static std::unique_ptr<InputSource> batch(BatchSpec spec, std::size_t bufferCount, bool checkOutputs,
                                            FileCache& cache);
  virtual ~InputSource() = default;
  virtual std::size_t setCount() const = 0;
  virtual PreparedSet prepare(std::size_t setIndex) = 0;
};

}  // namespace qaic::runner
