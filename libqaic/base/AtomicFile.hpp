// SPDX-License-Identifier: Apache-2.0
// A file that is complete or absent: bytes go to a temporary beside `path` (mkstemp), are
// flushed to disk, get `mode`, and only then are renamed over `path`. A full disk, an error or a
// crash never leaves a truncated file under the final name, and the temporary is removed on
// every error path. Used for program containers, tool outputs and reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace qaic {

class AtomicWriteError : public std::runtime_error {
 public:
  // what(): "<path>: <what failed>: <strerror>"
  AtomicWriteError(const std::string& message, int error) : std::runtime_error(message), error_(error) {}
  int error() const { return error_; }

 private:
  int error_;
};

void writeFileAtomically(const std::string& path, std::span<const std::byte> bytes, mode_t mode = 0644);
inline void writeFileAtomically(const std::string& path, std::string_view text, mode_t mode = 0644) {
  writeFileAtomically(path, std::as_bytes(std::span(text.data(), text.size())), mode);
}
inline void writeFileAtomically(const std::string& path, std::span<const uint8_t> bytes, mode_t mode = 0644) {
  writeFileAtomically(path, std::as_bytes(bytes), mode);
}

}  // namespace qaic
