// SPDX-License-Identifier: Apache-2.0
// Storage of a transferred programqpc.bin: an anonymous memory file (memfd) mapped shared and
// writable into the emulator only, so a load's bytes (mostly constants) are shared memory, not
// the emulator's private heap, and runs of zeros the client sent stay holes that cost nothing.
// The mapping is page aligned, so the container's constants keep the 64-byte alignment the
// format promises, and the programs' kernels may rewrite a constant in place
// (kernels::ConstantPacking). `programState` is what the programs made from it share
// (ContainerProgram.cpp: the validated image, the packed constants); it lives as long as the
// bytes. Freed (unmapped, closed) with the last holder: release, unload or any error path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/UniqueFd.hpp"

namespace qaic::emu {

class UserMemory;

class LoadBuffer {
 public:
  LoadBuffer() = default;
  ~LoadBuffer();
  LoadBuffer(const LoadBuffer&) = delete;
  LoadBuffer& operator=(const LoadBuffer&) = delete;

  // A buffer holding a copy of `bytes` (tests and benchmarks). Throws std::bad_alloc.
  static std::shared_ptr<LoadBuffer> copyOf(std::span<const std::byte> bytes);

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The memory file (-1 while empty): SEEK_DATA / SEEK_HOLE find what is a hole.
  int fd() const { return fd_.get(); }

  // Appends `bytes` read from the caller's memory at `address`, 1 MiB at a time; steps that
  // are all zeros are not written (they stay holes). 0, or ENOMEM / EFAULT after which the
  // buffer is to be dropped. The mapping may move: nothing may point into the old bytes.
  int appendFrom(const UserMemory& caller, uint64_t address, uint64_t bytes);
  // Appends the bytes of `other`, skipping its all-zero steps. 0 or ENOMEM.
  int appendCopy(std::span<const std::byte> other);

  mutable std::shared_ptr<void> programState;

 private:
  int grow(uint64_t newSize);  // the file and the mapping; contents kept

  UniqueFd fd_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The bytes of one program load, shared by its activations.
using LoadBytes = std::shared_ptr<const LoadBuffer>;

}  // namespace qaic::emu
