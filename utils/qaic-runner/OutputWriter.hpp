// SPDX-License-Identifier: Apache-2.0
// --write-output-dir: each written output is a complete file or no file. Data goes to a hidden
// temporary in the same directory, is flushed to disk, and only then renamed to its final name,
// so a full disk or a crash never leaves a truncated file that looks complete. File names come
// from the container's buffer names, which are checked so nothing lands outside the directory.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace qaic::runner {

class OutputWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputWriter {
 public:
  // Creates the directory if needed. Throws OutputWriteError naming it.
  explicit OutputWriter(std::string directory);
  // Writes <directory>/<bufferName>-inf-<iteration>.bin. Throws OutputWriteError naming the file
  // and the system error; the partial temporary is removed.
  std::string write(const std::string& bufferName, uint64_t iteration, std::span<const uint8_t> bytes) const;
  // Writes <directory>/<fileName> the same way (fileName must be a safe name).
  std::string writeFile(const std::string& fileName, std::span<const uint8_t> bytes) const;
  // A buffer name that is safe as one path component: not empty, no '/', not starting with '.'.
  static bool isSafeName(const std::string& name);

 private:
  std::string directory_;
};

}  // namespace qaic::runner
