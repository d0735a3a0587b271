// SPDX-License-Identifier: Apache-2.0
#include "FusePassthrough.hpp"

#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "MemoryFile.hpp"

namespace qaic::emu {
namespace {

// The kernel's FUSE ABI (include/uapi/linux/fuse.h, protocol 7.40 and later) where Debian's
// headers predate passthrough: only what the hooks read or change.
constexpr uint32_t kOpcodeOpen = 14;
constexpr uint32_t kOpcodeInit = 26;
constexpr uint32_t kInitExt = 1u << 30;                  // flags2 is meaningful
constexpr uint32_t kInitWritebackCache = 1u << 16;       // excludes passthrough
constexpr uint32_t kInit2Passthrough = 1u << (37 - 32);  // FUSE_PASSTHROUGH, in flags2
constexpr uint32_t kOpenDirectIo = 1u << 0;
constexpr uint32_t kOpenPassthrough = 1u << 7;
// The open flags a passthrough open may carry besides FOPEN_PASSTHROUGH (the kernel refuses the
// open otherwise): direct I/O (read and write then still reach the server), parallel direct
// writes, no flush.
constexpr uint32_t kOpenPassthroughAllowed = kOpenPassthrough | kOpenDirectIo | (1u << 6) | (1u << 5);
constexpr uint32_t kMaxStackDepth = 1;  // a tmpfs file, itself stacked on nothing

struct InHeader {
  uint32_t len;
  uint32_t opcode;
  uint64_t unique;
  uint64_t nodeid;
  uint32_t uid, gid, pid;
  uint16_t totalExtlen, padding;
};
static_assert(sizeof(InHeader) == 40);
struct InitIn {
  uint32_t major, minor, maxReadahead, flags, flags2;
};
struct OutHeader {
  uint32_t len;
  int32_t error;
  uint64_t unique;
};
static_assert(sizeof(OutHeader) == 16);
struct InitOut {
  uint32_t major, minor, maxReadahead, flags;
  uint16_t maxBackground, congestionThreshold;
  uint32_t maxWrite, timeGran;
  uint16_t maxPages, mapAlignment;
  uint32_t flags2, maxStackDepth;
  uint16_t requestTimeout;
  uint16_t unused[11];
};
static_assert(sizeof(InitOut) == 64);
struct OpenOut {
  uint64_t fh;
  uint32_t openFlags;
  int32_t backingId;
};
static_assert(sizeof(OpenOut) == 16);
struct BackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
constexpr unsigned long kBackingOpen = _IOW(229, 1, BackingMap);
constexpr unsigned long kBackingClose = _IOW(229, 2, uint32_t);

FusePassthrough::Finder finder = nullptr;

ssize_t readHook(int fd, void* buf, size_t size, void* userdata) { return finder(userdata).readRequest(fd, buf, size); }
ssize_t writevHook(int fd, struct iovec* iov, int count, void* userdata) {
  return finder(userdata).writeReply(fd, iov, count);
}

// The reply's payload as one struct when the reply carries exactly it after the header.
template <typename T>
T* payloadOf(struct iovec* iov, int count) {
  if (count == 2 && iov[1].iov_len == sizeof(T)) return static_cast<T*>(iov[1].iov_base);
  return nullptr;
}

}  // namespace

FusePassthrough::~FusePassthrough() { closeAll(); }

int FusePassthrough::install(fuse_session* session, Finder self) {
  finder = self;
  fuseFd_ = fuse_session_fd(session);
  if (!wanted_) return 0;
  fuse_custom_io io{};
  io.read = readHook;
  io.writev = writevHook;
  const int result = fuse_session_custom_io(session, &io, fuseFd_);
  if (result == 0) {
    std::lock_guard lock(mutex_);
    installed_ = true;
  }
  return result;
}

void FusePassthrough::awaitInitReply(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!installed_) return;
  initReplied_.wait_for(lock, timeout, [this] { return initSeen_; });
}

std::string FusePassthrough::inactiveReason() const {
  if (active_.load()) return "";
  if (!wanted_) return "disabled (--no-passthrough, or the emulator lacks CAP_SYS_ADMIN)";
  return "the kernel did not offer FUSE passthrough";
}

ssize_t FusePassthrough::readRequest(int fd, void* buf, size_t size) {
  const ssize_t got = ::read(fd, buf, size);
  if (got < static_cast<ssize_t>(sizeof(InHeader))) return got;
  InHeader header;
  std::memcpy(&header, buf, sizeof header);
  if (header.opcode == kOpcodeOpen) {
    std::lock_guard lock(mutex_);
    openUniques_.insert(header.unique);
  } else if (header.opcode == kOpcodeInit && got >= static_cast<ssize_t>(sizeof(InHeader) + sizeof(InitIn))) {
    InitIn init;
    std::memcpy(&init, static_cast<const char*>(buf) + sizeof header, sizeof init);
    std::lock_guard lock(mutex_);
    initPending_ = true;
    initUnique_ = header.unique;
    offered_ = (init.flags & kInitExt) != 0 && (init.flags2 & kInit2Passthrough) != 0;
  }
  return got;
}

ssize_t FusePassthrough::writeReply(int fd, struct iovec* iov, int count) {
  if (count >= 1 && iov[0].iov_len == sizeof(OutHeader)) {
    const auto* header = static_cast<const OutHeader*>(iov[0].iov_base);
    std::lock_guard lock(mutex_);
    if (initPending_ && header->unique == initUnique_) {
      initPending_ = false;
      initSeen_ = true;
      initReplied_.notify_all();
      auto* init = payloadOf<InitOut>(iov, count);
      if (header->error == 0 && init != nullptr && offered_ && (init->flags & kInitWritebackCache) == 0) {
        init->flags |= kInitExt;
        init->flags2 |= kInit2Passthrough;
        init->maxStackDepth = kMaxStackDepth;
        active_.store(true);
      }
    } else if (openUniques_.erase(header->unique) != 0) {
      auto* open = payloadOf<OpenOut>(iov, count);
      if (header->error == 0 && open != nullptr) {
        if (auto it = pendingOpens_.find(open->fh); it != pendingOpens_.end()) {
          open->openFlags = (open->openFlags | kOpenPassthrough) & kOpenPassthroughAllowed;
          open->backingId = it->second;
          pendingOpens_.erase(it);
        }
      }
    }
  }
  return ::writev(fd, iov, count);
}

int FusePassthrough::backingFor(const std::shared_ptr<DeviceMemoryFile>& file) {
  if (!active_.load() || !file) return 0;
  std::lock_guard lock(mutex_);
  for (auto it = backings_.begin(); it != backings_.end();) {
    if (it->second.file.expired()) {
      uint32_t id = static_cast<uint32_t>(it->second.id);
      if (id > 0) ::ioctl(fuseFd_, kBackingClose, &id);
      it = backings_.erase(it);
    } else {
      ++it;
    }
  }
  if (auto it = backings_.find(file.get()); it != backings_.end()) return it->second.id;
  BackingMap map{file->fd(), 0, 0};
  const int id = ::ioctl(fuseFd_, kBackingOpen, &map);
  // A refusal is remembered too: every open of an inode must agree on passthrough.
  backings_[file.get()] = Backing{file, id > 0 ? id : 0};
  return id > 0 ? id : 0;
}

int FusePassthrough::tryBacking(int fd) const {
  BackingMap map{fd, 0, 0};
  const int id = ::ioctl(fuseFd_, kBackingOpen, &map);
  if (id <= 0) return id < 0 ? errno : EINVAL;
  uint32_t closeId = static_cast<uint32_t>(id);
  ::ioctl(fuseFd_, kBackingClose, &closeId);
  return 0;
}

void FusePassthrough::expectOpen(uint64_t fh, int backingId) {
  std::lock_guard lock(mutex_);
  pendingOpens_[fh] = backingId;
}

void FusePassthrough::forgetOpen(uint64_t fh) {
  std::lock_guard lock(mutex_);
  pendingOpens_.erase(fh);
}

void FusePassthrough::closeAll() {
  std::lock_guard lock(mutex_);
  for (auto& [file, backing] : backings_) {
    uint32_t id = static_cast<uint32_t>(backing.id);
    if (id > 0 && fuseFd_ >= 0) ::ioctl(fuseFd_, kBackingClose, &id);
  }
  backings_.clear();
}

}  // namespace qaic::emu
