// SPDX-License-Identifier: Apache-2.0
// Serializes QpcContents into the programqpc.bin format (docs/formats/qpc.md). The writer checks
// what the reader checks (names, dims, sizes, indices), so it never produces a file the reader
// rejects; index fields are taken from positions and must already match them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "container/QpcFormatError.hpp"
#include "container/QpcModel.hpp"

namespace qaic::container {

// Throws QpcFormatError (BadValue / BadString / AbsurdCount) naming the offending field.
std::vector<std::byte> serializeQpc(const QpcContents& contents);

// Writes atomically: a temporary file in the same directory, fsync, then rename over `path`.
// On any error no file (temporary or partial) is left behind. Throws QpcFormatError.
void writeQpcFile(const std::string& path, const QpcContents& contents);

}  // namespace qaic::container
