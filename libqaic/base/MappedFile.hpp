// SPDX-License-Identifier: Apache-2.0
// One MAP_SHARED mapping of a memory file in the emulator's shared-memory directory (or of a
// read-only data file), with the descriptor it came from. Unmaps and closes exactly once.
#pragma once

#include <cstddef>
#include <filesystem>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic {

class MappedFile {
 public:
  // Opens `path` read-write, checks it holds at least `size` bytes (a shorter file would fault
  // on access instead of failing here) and maps `size` bytes of it.
  static Result<MappedFile> open(const std::filesystem::path& path, std::size_t size);
  // Maps all of the regular file `path` read-only and shared (writing through data() faults):
  // weights a program reads, costing page cache instead of heap. An empty file maps nothing.
  static Result<MappedFile> openReadOnly(const std::filesystem::path& path);
  // Maps `size` bytes of an already open descriptor at `offset` (a real device node's BO).
  static Result<MappedFile> map(int fd, std::size_t size, uint64_t offset, const char* what);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const { return static_cast<std::byte*>(address_); }
  std::size_t size() const { return size_; }
  int fd() const { return fd_.get(); }

 private:
  MappedFile(UniqueFd fd, void* address, std::size_t size) : fd_(std::move(fd)), address_(address), size_(size) {}
  void unmap();

  UniqueFd fd_;
  void* address_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace qaic
