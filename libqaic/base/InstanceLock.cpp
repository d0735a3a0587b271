// SPDX-License-Identifier: Apache-2.0
#include "base/InstanceLock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace qaic {
namespace {

flock wholeFile(short type) {
  flock lock{};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // to the end, however long
  return lock;
}

}  // namespace

Result<UniqueFd> createHeldInstanceLock(const std::string& path, unsigned mode) {
  const std::string fresh = path + ".new";
  UniqueFd fd(::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return SysError{errno, "creating " + fresh};
  auto fail = [&](const std::string& what) {
    const int error = errno;
    ::unlink(fresh.c_str());
    return SysError{error, what + " " + fresh};
  };
  if (::fchmod(fd.get(), mode) != 0) return fail("chmod");  // past the umask
  flock lock = wholeFile(F_WRLCK);
  if (::fcntl(fd.get(), F_OFD_SETLK, &lock) != 0) return fail("locking");
  if (::rename(fresh.c_str(), path.c_str()) != 0) return fail("renaming");
  return fd;
}

Result<UniqueFd> openInstanceLock(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return SysError{errno, "open " + path};
  return fd;
}

Result<bool> instanceLockHeld(int fd) {
  // A read lock conflicts with the holder's write lock and with nothing else.
  flock probe = wholeFile(F_RDLCK);
  if (::fcntl(fd, F_OFD_GETLK, &probe) != 0) return lastError("F_OFD_GETLK on an instance lock");
  return probe.l_type != F_UNLCK;
}

}  // namespace qaic
