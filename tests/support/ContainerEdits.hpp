// SPDX-License-Identifier: Apache-2.0
// Containers edited the way a hostile or damaged file would be, for the tests of the programs
// that read them (qaic-runner): through the container and IR libraries, so that the edit is
// still a well-formed container unless the test breaks it on purpose.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace qaic::testing {

// What the container writer refuses to write (e.g. a NUL inside a name).
struct ContainerRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `to` (a programqpc.bin) as the container `from` with io buffer `bufferName` renamed to
// `newName` in the IO descriptor and in every program's IR. Throws ContainerRefused.
void writeWithBufferRenamed(const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& bufferName, const std::string& newName);

// Recomputes the checksum of a container's bytes after they were patched by hand.
void repairChecksum(std::string& containerBytes);

}  // namespace qaic::testing
