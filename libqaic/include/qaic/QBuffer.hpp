// SPDX-License-Identifier: Apache-2.0
// A user's input or output buffer (seed 001): heap memory the runtime stages through its own
// device buffers, or a region of a DMA buffer: a device buffer object mapped into the process
// (Context::allocateDmaBuffer), or any dma-buf descriptor the caller holds (another device's
// DMA buffer, another process's export, a memfd), which the runtime imports into the set's
// device without a copy. `handle`, `offset` are used only for DMA buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace qaic::rt {

enum QBufferType : uint32_t {
  QBUFFER_TYPE_HEAP = 0,
  QBUFFER_TYPE_DMABUF = 1,
};

struct QBuffer {
  std::size_t size = 0;    // bytes at buf (heap) or at handle + offset (DMA)
  uint8_t* buf = nullptr;  // heap: must be valid; DMA: the mapped address of handle + offset
  int handle = -1;         // DMA: a dma-buf descriptor (DmaBuffer::fd(), a memfd, ...)
  std::size_t offset = 0;  // DMA: where this buffer starts inside the DMA buffer
  QBufferType type = QBUFFER_TYPE_HEAP;
};

// A device buffer object mapped into this process. Created by Context::allocateDmaBuffer; the
// mapping and the object live as long as the last shared_ptr. Where a buffer's device format is
// its user format, the device reads and writes these pages in place (zero copy); the first
// activation to do so keeps the buffer, in that direction (docs/runtime.md). Do not touch a
// buffer while an inference using it is in flight.
class DmaBuffer {
 public:
  virtual ~DmaBuffer() = default;
  virtual uint8_t* data() const = 0;
  virtual std::size_t size() const = 0;
  // Its dma-buf descriptor (PRIME export), owned by this object: a QBuffer handle for sets on any
  // device, or a descriptor to hand to another process or device.
  virtual int fd() const = 0;
  // A QBuffer for [offset, offset + bytes) of this buffer; bytes 0 means "to the end".
  QBuffer qbuffer(std::size_t offset = 0, std::size_t bytes = 0) const;
};

}  // namespace qaic::rt
