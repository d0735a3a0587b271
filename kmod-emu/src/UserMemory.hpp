// SPDX-License-Identifier: Apache-2.0
// Reads and writes the memory of the process that issued an ioctl, the way the kernel's
// copy_from_user / copy_to_user do for embedded pointers (FUSE copies only the fixed argument).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace qaic::emu {

class UserMemory {
 public:
  explicit UserMemory(pid_t pid) : pid_(pid) {}

  // 0 on success, else EFAULT (a range the caller cannot access, or a short transfer).
  int read(uint64_t address, void* out, std::size_t bytes) const;
  int write(uint64_t address, const void* in, std::size_t bytes) const;

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// The thread-group id of a thread id (FUSE reports the calling thread), or -1.
pid_t threadGroupOf(pid_t tid);

// A duplicate of file descriptor `fd` of process `pid` (pidfd_getfd), or -errno.
int takeRemoteFd(pid_t pid, int fd);

// The flags of descriptor `fd` of process `pid` as /proc/<pid>/fdinfo shows them (the open
// file's status flags plus O_CLOEXEC when the descriptor has it): 0 or an errno.
int remoteDescriptorFlags(pid_t pid, int fd, int& flags);

}  // namespace qaic::emu
