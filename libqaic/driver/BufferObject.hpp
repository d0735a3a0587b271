// A buffer object: CREATE_BO, MMAP_BO, then a shared mapping of its memory (on the emulator the
// memory file <emu_shm_dir>/bo-<offset>, docs/device-protocol.md section 1; on a real device the
// node at the fake offset). Unmaps and closes its export descriptor on destruction; the BO
// itself lives until the device node is closed, so the DeviceNode must outlive this object's use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"
#include "base/MappedFile.hpp"
#include "base/Result.hpp"

namespace qaic::driver {

class BufferObject {
 public:
  static Result<BufferObject> create(const DeviceNode& node, std::size_t size);

  uint32_t handle() const { return handle_; }
  uint64_t mmapOffset() const { return mmapOffset_; }
  std::size_t size() const { return memory_.size(); }
  std::span<std::byte> bytes() const { return {memory_.data(), memory_.size()}; }
  std::byte* data() const { return memory_.data(); }

  // The descriptor of the BO's memory file: what a dma-buf fd is on real hardware. Owned by
  // this object; -1 on a real device.
  int exportFd() const { return memory_.fd(); }
  // The IO virtual address of `offset` inside this BO for request elements (section 2).
  uint64_t iova(uint32_t offset = 0) const { return makeIova(handle_, offset); }

 private:
  BufferObject(uint32_t handle, uint64_t offset, MappedFile memory)
      : handle_(handle), mmapOffset_(offset), memory_(std::move(memory)) {}

  uint32_t handle_ = 0;
  uint64_t mmapOffset_ = 0;
  MappedFile memory_;
};

}  // namespace qaic::driver
