// SPDX-License-Identifier: Apache-2.0
// A buffer object and this process's mapping of it: created (CREATE_BO, MMAP_BO, then mmap of the
// node at that offset; on an emulator without FUSE passthrough, of the node's memory file
// <shm_dir>/memory-accel<N> at the same offset, docs/device-protocol.md section 1) or imported from
// a dma-buf descriptor (PRIME_FD_TO_HANDLE, then a mapping of the descriptor itself; an emulated
// device's export is mapped at its position, the BO's offset). Destruction unmaps it and closes the
// handle (GEM_CLOSE through libdrm) while the node's file is open, so its memory goes back to the
// device once no slice or queued request holds it; after the file closed, there is nothing left to
// close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/MappedFile.hpp"
#include "base/Result.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::driver {

class BufferObject {
 public:
  static Result<BufferObject> create(const DeviceNode& node, std::size_t size);
  // Imports `dmabuf` (a descriptor of this process: another device's export, a memfd, a dma-buf,
  // open read-write) and maps all of it. The descriptor stays the caller's.
  static Result<BufferObject> import(const DeviceNode& node, int dmabuf);

  ~BufferObject();
  BufferObject(BufferObject&&) noexcept = default;
  BufferObject& operator=(BufferObject&& other) noexcept;
  BufferObject(const BufferObject&) = delete;
  BufferObject& operator=(const BufferObject&) = delete;

  uint32_t handle() const { return handle_; }
  uint64_t mmapOffset() const { return mmapOffset_; }  // 0 for an import
  std::size_t size() const { return memory_.size(); }
  std::span<std::byte> bytes() const { return {memory_.data(), memory_.size()}; }
  std::byte* data() const { return memory_.data(); }

  // The IO virtual address of `offset` inside this BO for request elements (section 2).
  uint64_t iova(uint32_t offset = 0) const { return makeIova(handle_, offset); }

 private:
  BufferObject(const DeviceNode& node, uint32_t handle, uint64_t offset, MappedFile memory)
      : node_(node.file()), handle_(handle), mmapOffset_(offset), memory_(std::move(memory)) {}
  void close();

  std::weak_ptr<const UniqueFd> node_;  // empty once moved from
  uint32_t handle_ = 0;
  uint64_t mmapOffset_ = 0;
  MappedFile memory_;
};

}  // namespace qaic::driver
