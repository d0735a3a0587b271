// SPDX-License-Identifier: Apache-2.0
#include "UserMemory.hpp"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace qaic::emu {
namespace {

// process_vm_* transfer at most IOV_MAX pages per call in practice; loop until done.
template <typename Fn>
int transfer(Fn fn, pid_t pid, uint64_t address, void* local, std::size_t bytes) {
  if (bytes == 0) return 0;
  if (address == 0 || address + bytes < address) return EFAULT;
  std::size_t done = 0;
  while (done < bytes) {
    iovec mine{static_cast<char*>(local) + done, bytes - done};
    iovec theirs{reinterpret_cast<void*>(static_cast<uintptr_t>(address + done)), bytes - done};
    ssize_t n = fn(pid, &mine, 1, &theirs, 1, 0);
    if (n <= 0) return EFAULT;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

int UserMemory::read(uint64_t address, void* out, std::size_t bytes) const {
  return transfer(process_vm_readv, pid_, address, out, bytes);
}

int UserMemory::write(uint64_t address, const void* in, std::size_t bytes) const {
  return transfer(process_vm_writev, pid_, address, const_cast<void*>(in), bytes);
}

pid_t threadGroupOf(pid_t tid) {
  std::ifstream status("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  }
  return -1;
}

int takeRemoteFd(pid_t pid, int fd) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -errno;
  int local = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  int err = errno;
  close(pidfd);
  return local < 0 ? -err : local;
}

int remoteDescriptorFlags(pid_t pid, int fd, int& flags) {
  std::ifstream info("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd));
  if (!info) return EBADF;
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("flags:", 0) != 0) continue;
    try {
      flags = static_cast<int>(std::stol(line.substr(6), nullptr, 8));
    } catch (const std::exception&) {
      return EIO;
    }
    return 0;
  }
  return EIO;
}

}  // namespace qaic::emu
