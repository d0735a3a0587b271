// SPDX-License-Identifier: Apache-2.0
#include "LoadBuffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "UserMemory.hpp"

namespace qaic::emu {

namespace {

constexpr uint64_t kStep = 1ull << 20;

bool allZero(std::span<const std::byte> bytes) {
  return bytes.empty() ||
         (bytes[0] == std::byte{0} && std::memcmp(bytes.data(), bytes.data() + 1, bytes.size() - 1) == 0);
}

}  // namespace

LoadBuffer::~LoadBuffer() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

std::shared_ptr<LoadBuffer> LoadBuffer::copyOf(std::span<const std::byte> bytes) {
  auto buffer = std::make_shared<LoadBuffer>();
  if (buffer->appendCopy(bytes) != 0) throw std::bad_alloc();
  return buffer;
}

int LoadBuffer::grow(uint64_t newSize) {
  if (!fd_) {
    fd_.reset(::memfd_create("qaic-emu-load", MFD_CLOEXEC));
    if (!fd_) return ENOMEM;
  }
  if (::ftruncate(fd_.get(), static_cast<off_t>(newSize)) != 0) return ENOMEM;
  void* mapped = data_ == nullptr ? ::mmap(nullptr, newSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0)
                                  : ::mremap(data_, size_, newSize, MREMAP_MAYMOVE);
  if (mapped == MAP_FAILED) return ENOMEM;  // the mapping still holds the old size_ bytes
  data_ = static_cast<std::byte*>(mapped);
  size_ = newSize;
  return 0;
}

int LoadBuffer::appendFrom(const UserMemory& caller, uint64_t address, uint64_t bytes) {
  const std::size_t start = size_;
  if (bytes > UINT64_MAX - start) return ENOMEM;
  if (int err = grow(start + bytes)) return err;
  // Read through a bounce buffer so that zero steps never touch the file's pages.
  std::vector<std::byte> step(static_cast<std::size_t>(std::min(bytes, kStep)));
  for (uint64_t done = 0; done < bytes;) {
    const auto count = static_cast<std::size_t>(std::min(kStep, bytes - done));
    if (caller.read(address + done, step.data(), count) != 0) return EFAULT;
    const std::span<const std::byte> read(step.data(), count);
    if (!allZero(read)) std::memcpy(data_ + start + done, read.data(), count);
    done += count;
  }
  return 0;
}

int LoadBuffer::appendCopy(std::span<const std::byte> other) {
  const std::size_t start = size_;
  if (other.empty()) return 0;
  if (int err = grow(start + other.size())) return err;
  for (std::size_t done = 0; done < other.size(); done += kStep) {
    const auto piece = other.subspan(done, std::min<std::size_t>(kStep, other.size() - done));
    if (!allZero(piece)) std::memcpy(data_ + start + done, piece.data(), piece.size());
  }
  return 0;
}

}  // namespace qaic::emu
