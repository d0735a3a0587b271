// SPDX-License-Identifier: Apache-2.0
// The pages behind buffer objects, as the kernel's GEM objects and dma-bufs hold them: a memory
// file the emulator created for CREATE_BO, or a file a client handed over by descriptor (PRIME
// import: a BO exported by any device, a memfd, a dma-buf). A memory is shared by every BO that
// names it (on any open file of any device) and goes with its last holder: the file is unmapped
// and, when the emulator created it, unlinked. What still maps or holds it open in a client
// process keeps the pages until that process lets go too, as an exported dma-buf does.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <compare>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "MemoryFile.hpp"
#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::emu {

// A file's identity: every descriptor of the same file shows the same pair (fstat).
struct MemoryIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  auto operator<=>(const MemoryIdentity&) const = default;
};

class BufferMemory {
 public:
  // Memory the emulator created (CREATE_BO).
  explicit BufferMemory(std::unique_ptr<MemoryFile> file);
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
  // True for memory of CREATE_BO (mappable at its MMAP_BO offset's file name).
  bool created() const { return file_ != nullptr; }
  // A new descriptor of this memory in the emulator's own process, as the kernel makes an
  // export's dma-buf: `openFlags` is O_RDWR or O_RDONLY (DRM_RDWR or not); always close-on-exec
  // here, the caller's copy gets its own flag. EINVAL for an import, whose file the emulator
  // holds no descriptor of (docs/emulator.md, "Buffer objects, GEM and PRIME").
  Result<UniqueFd> openExport(int openFlags) const;
  // The client truncated the file under a program that used it in place, and a zero page now
  // stands in the emulator's mapping where the file's page was (InPlaceAccess): every later
  // transfer through it fails with DMA_FAILED instead of moving those zeros.
  void damage() { damaged_.store(true); }
  bool damaged() const { return damaged_.load(); }

 private:
  BufferMemory(std::byte* data, std::size_t size, MemoryIdentity identity)
      : data_(data), size_(size), identity_(identity) {}

  std::unique_ptr<MemoryFile> file_;  // created memory; null for an import
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

 private:
  std::mutex mutex_;
  std::map<MemoryIdentity, std::weak_ptr<BufferMemory>> memories_;
  std::size_t sweepAt_ = 64;
};

}  // namespace qaic::emu
