// SPDX-License-Identifier: Apache-2.0
// The pages behind buffer objects, as the kernel's GEM objects and dma-bufs hold them: a range of
// a device node's memory file that the emulator reserved for CREATE_BO (at the BO's MMAP_BO
// offset), or a file a client handed over by descriptor (PRIME import: a memfd, a dma-buf). A
// memory is shared by every BO that names it (on any open file of any device) and goes with its
// last holder: the range is unmapped and punched out of the memory file (a client mapping that
// outlives it then reads zeros), an import's mapping is dropped; what a client process still
// holds of an imported file keeps its pages, as an exported dma-buf does.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "MemoryFile.hpp"
#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::emu {

// A memory's identity: the file's (every descriptor of it shows the same pair, fstat) and, for a
// device memory file, the BO's offset in it (an export descriptor's file position); 0 otherwise.
struct MemoryIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  uint64_t offset = 0;
  auto operator<=>(const MemoryIdentity&) const = default;
};

class BufferMemory {
 public:
  // Memory the emulator created (CREATE_BO): `bytes` at `offset` of a node's memory file,
  // reserved and mapped. Returns nullptr and an errno (ENOMEM when tmpfs is full).
  static std::shared_ptr<BufferMemory> create(std::shared_ptr<const DeviceMemoryFile> file, uint64_t offset,
                                              std::size_t bytes, int& error);
  // Maps a client's descriptor (already taken into this process) for PRIME import. It must be
  // a file on tmpfs or hugetlbfs (a memfd, a memory file of this or another emulator) or a
  // dma-buf, open read-write (the device writes through the mapping: a read-only descriptor
  // would let a client have the device write where it may not), of 1 byte to 4 GiB. Returns
  // nullptr and an errno: EACCES (not read-write), EINVAL (another kind of file, empty, too
  // large, or a mapping the kernel refuses, e.g. a write-sealed memfd).
  static std::shared_ptr<BufferMemory> map(int fd, int& error);
  ~BufferMemory();
  BufferMemory(const BufferMemory&) = delete;
  BufferMemory& operator=(const BufferMemory&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const MemoryIdentity& identity() const { return identity_; }
  // True for memory of CREATE_BO (mappable through its node at its MMAP_BO offset).
  bool created() const { return file_ != nullptr; }
  // A PRIME export of created memory, as the kernel makes an export's dma-buf: a new open file
  // description of the node's memory file positioned at the BO's offset, in the emulator's own
  // process. `openFlags` is O_RDWR or O_RDONLY (DRM_RDWR or not); always close-on-exec here, the
  // caller's copy gets its own flag. EINVAL for an import, whose file the emulator holds no
  // descriptor of (docs/emulator.md, "Buffer objects, GEM and PRIME").
  Result<UniqueFd> openExport(int openFlags) const;
  // The client truncated the file under a program that used it in place, and a zero page now
  // stands in the emulator's mapping where the file's page was (InPlaceAccess): every later
  // transfer through it fails with DMA_FAILED instead of moving those zeros.
  void damage() { damaged_.store(true); }
  bool damaged() const { return damaged_.load(); }

 private:
  BufferMemory(std::byte* data, std::size_t size, MemoryIdentity identity)
      : data_(data), size_(size), identity_(identity) {}

  std::shared_ptr<const DeviceMemoryFile> file_;  // created memory; null for an import
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  MemoryIdentity identity_;
  std::atomic<bool> damaged_{false};
};

// Every live memory of one emulator instance by identity, so that importing a descriptor of a
// memory the emulator already maps (another BO's export, the same memfd twice, on any device)
// shares it instead of mapping the file again. Holds no memory alive.
class MemoryRegistry {
 public:
  std::shared_ptr<BufferMemory> find(const MemoryIdentity& identity);
  void add(const std::shared_ptr<BufferMemory>& memory);
  // A node's memory file: a descriptor of it names the BO at the descriptor's file position.
  void addDeviceFile(const DeviceMemoryFile& file);
  // The identity a descriptor names (fstat, and the file position for a device memory file);
  // `deviceFile` says which. False when the descriptor cannot be examined.
  bool identityOf(int fd, MemoryIdentity& identity, bool& deviceFile);

 private:
  std::mutex mutex_;
  std::set<std::pair<dev_t, ino_t>> deviceFiles_;
  std::map<MemoryIdentity, std::weak_ptr<BufferMemory>> memories_;
  std::size_t sweepAt_ = 64;
};

}  // namespace qaic::emu
