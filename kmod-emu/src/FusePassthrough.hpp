// SPDX-License-Identifier: Apache-2.0
// FUSE passthrough for the device nodes (docs/emulator.md, "mmap of the node"): the kernel maps a
// passthrough file's mmap onto its backing file at the same offset, so `mmap(node, offset)` of a
// BO maps the node's memory file there, as mainline maps the BO. Debian's libfuse 3.14 has no API
// for it, so the session's own reads and writes of /dev/fuse (fuse_session_custom_io) do what a
// newer libfuse would: the INIT reply asks for passthrough when the kernel's INIT offered it, and
// an OPEN reply of a device node carries FOPEN_PASSTHROUGH with the node's backing id. Replies are
// matched to requests by their `unique`.
#pragma once

#include <sys/types.h>
#include "FuseOps.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace qaic::emu {

class DeviceMemoryFile;

class FusePassthrough {
 public:
  // `wanted` false (--no-passthrough, or no CAP_SYS_ADMIN) leaves the session as libfuse runs it.
  explicit FusePassthrough(bool wanted) : wanted_(wanted) {}
  ~FusePassthrough();

  // Installs the hooks on a mounted session (`userdata` of the hooks is the session's, which
  // must hand back this object through `self`). Returns 0 or a negative errno.
  using Finder = FusePassthrough& (*)(void* sessionUserdata);
  int install(fuse_session* session, Finder self);
  // True once the kernel accepted passthrough in INIT.
  bool active() const { return active_.load(); }
  // Waits (at most `timeout`) until the INIT reply went out through the hooks: libfuse calls the
  // init operation before it writes that reply, so whoever learns of INIT from the operation
  // would otherwise ask active() too early and find passthrough off. Returns at once when the
  // hooks are not installed.
  void awaitInitReply(std::chrono::milliseconds timeout);
  // Registers and at once closes `fd` as a backing file: 0, or the errno of the kernel's refusal
  // (EPERM without CAP_SYS_ADMIN in the initial user namespace).
  int tryBacking(int fd) const;
  // Why it is not active, for the start's log line ("" while it is).
  std::string inactiveReason() const;

  // The backing id of `file` (registered at first use), 0 when passthrough is off or the kernel
  // refused the file. Backing files whose memory file is gone are closed on the way.
  int backingFor(const std::shared_ptr<DeviceMemoryFile>& file);
  // The OPEN reply with file handle `fh` is a passthrough open of `backingId`.
  void expectOpen(uint64_t fh, int backingId);
  // An OPEN reply that was never sent (fuse_reply_open failed).
  void forgetOpen(uint64_t fh);
  // Closes every backing id (before the session goes).
  void closeAll();

  // The hooks (public for the C callbacks).
  ssize_t readRequest(int fd, void* buf, size_t size);
  ssize_t writeReply(int fd, struct iovec* iov, int count);

 private:
  const bool wanted_;
  int fuseFd_ = -1;
  std::atomic<bool> active_{false};
  std::mutex mutex_;
  bool offered_ = false;
  bool initSeen_ = false;
  bool installed_ = false;
  std::condition_variable initReplied_;
  uint64_t initUnique_ = 0;
  bool initPending_ = false;
  std::set<uint64_t> openUniques_;
  std::map<uint64_t, int> pendingOpens_;  // fh -> backing id
  struct Backing {
    std::weak_ptr<DeviceMemoryFile> file;
    int id = 0;
  };
  std::map<const DeviceMemoryFile*, Backing> backings_;
};

}  // namespace qaic::emu
