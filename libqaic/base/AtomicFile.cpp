// SPDX-License-Identifier: Apache-2.0
#include "base/AtomicFile.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace qaic {

void writeFileAtomically(const std::string& path, std::span<const std::byte> bytes, mode_t mode) {
  std::string temporary = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    const int error = errno;
    throw AtomicWriteError(path + ": cannot create a temporary file: " + std::strerror(error), error);
  }
  auto fail = [&](const char* what, int error) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw AtomicWriteError(path + ": " + what + ": " + std::strerror(error), error);
  };
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", n < 0 ? errno : ENOSPC);
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, mode) != 0) fail("cannot set permissions", errno);
  if (::fsync(fd) != 0) fail("cannot sync", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("cannot close", errno);
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename into place", errno);
}

}  // namespace qaic
