// SPDX-License-Identifier: Apache-2.0
// The one error type of the program container: reading and writing programqpc.bin.
#pragma once

#include <stdexcept>
#include <string>

namespace qaic::container {

enum class QpcErrorCode {
  Io,         // the file could not be opened, mapped, written or renamed
  Truncated,  // shorter than its header or its declared size
  BadMagic,
  BadVersion,
  BadCrc,
  BadHeader,    // header size, flags or file size inconsistent
  OutOfRange,   // an offset or size points outside its section or the file
  Overlap,      // two sections (or two constants) share bytes
  AbsurdCount,  // a count beyond the format's limits or the section's size
  BadString,    // a string index outside the string table, or an empty / duplicate name
  BadValue,     // an enum, dims, size or index that is not allowed
};

const char* qpcErrorCodeName(QpcErrorCode code);

// The message names the file (or "<memory>") and the field, e.g.
// "programqpc.bin: constants[3].size 1024 does not match dims x dtype (512 bytes)".
class QpcFormatError : public std::runtime_error {
 public:
  QpcFormatError(QpcErrorCode code, std::string field, const std::string& message)
      : std::runtime_error(message), code_(code), field_(std::move(field)) {}
  QpcErrorCode code() const noexcept { return code_; }
  const std::string& field() const noexcept { return field_; }

 private:
  QpcErrorCode code_;
  std::string field_;
};

}  // namespace qaic::container
