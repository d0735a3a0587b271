// SPDX-License-Identifier: Apache-2.0
#include "BufferMemory.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {
namespace {

// linux/magic.h names TMPFS_MAGIC and HUGETLBFS_MAGIC; DMA_BUF_MAGIC is that of the dma-buf
// pseudo file system ("DMAB").
constexpr long kDmaBufMagic = 0x444d4142;

bool shareableFileSystem(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return false;
  const auto magic = static_cast<long>(fs.f_type);
  return magic == static_cast<long>(TMPFS_MAGIC) || magic == static_cast<long>(HUGETLBFS_MAGIC) ||
         magic == kDmaBufMagic;
}

}  // namespace

std::shared_ptr<BufferMemory> BufferMemory::create(std::shared_ptr<const DeviceMemoryFile> file, uint64_t offset,
                                                   std::size_t bytes, int& error) {
  std::byte* data = file->mapRange(offset, bytes, error);
  if (data == nullptr) return nullptr;
  auto memory = std::shared_ptr<BufferMemory>(
      new BufferMemory(data, bytes, MemoryIdentity{file->device(), file->inode(), offset}));
  memory->file_ = std::move(file);
  return memory;
}

std::shared_ptr<BufferMemory> BufferMemory::map(int fd, int& error) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !shareableFileSystem(fd)) {
    error = EINVAL;
    return nullptr;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) {
    error = EACCES;
    return nullptr;
  }
  if (st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > driver::kMaxBoBytes) {
    error = EINVAL;
    return nullptr;
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    error = EINVAL;
    return nullptr;
  }
  error = 0;
  return std::shared_ptr<BufferMemory>(
      new BufferMemory(static_cast<std::byte*>(data), bytes, MemoryIdentity{st.st_dev, st.st_ino, 0}));
}

Result<UniqueFd> BufferMemory::openExport(int openFlags) const {
  if (!file_) return SysError{EINVAL, "export of an imported BO"};
  int error = 0;
  UniqueFd fd = file_->openAt(identity_.offset, (openFlags & O_ACCMODE) | O_CLOEXEC, error);
  if (!fd) return SysError{error, "open " + file_->path()};
  return fd;
}

BufferMemory::~BufferMemory() {
  if (data_ == nullptr) return;
  if (file_)
    file_->releaseRange(data_, identity_.offset, size_);
  else
    munmap(data_, size_);
}

std::shared_ptr<BufferMemory> MemoryRegistry::find(const MemoryIdentity& identity) {
  std::lock_guard lock(mutex_);
  auto it = memories_.find(identity);
  if (it == memories_.end()) return nullptr;
  auto memory = it->second.lock();
  if (!memory) memories_.erase(it);
  return memory;
}

void MemoryRegistry::add(const std::shared_ptr<BufferMemory>& memory) {
  std::lock_guard lock(mutex_);
  // Expired entries are swept whenever the map has doubled since the last sweep: it stays within
  // twice the live memories at an amortized constant cost per memory.
  if (memories_.size() >= sweepAt_) {
    std::erase_if(memories_, [](const auto& entry) { return entry.second.expired(); });
    sweepAt_ = std::max<std::size_t>(64, 2 * memories_.size());
  }
  memories_[memory->identity()] = memory;
}

void MemoryRegistry::addDeviceFile(const DeviceMemoryFile& file) {
  std::lock_guard lock(mutex_);
  deviceFiles_.emplace(file.device(), file.inode());
}

bool MemoryRegistry::identityOf(int fd, MemoryIdentity& identity, bool& deviceFile) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  identity = MemoryIdentity{st.st_dev, st.st_ino, 0};
  {
    std::lock_guard lock(mutex_);
    deviceFile = deviceFiles_.contains({st.st_dev, st.st_ino});
  }
  if (!deviceFile) return true;
  const off_t position = lseek(fd, 0, SEEK_CUR);
  if (position < 0) return false;
  identity.offset = static_cast<uint64_t>(position);
  return true;
}

}  // namespace qaic::emu
