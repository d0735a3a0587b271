// SPDX-License-Identifier: Apache-2.0
// QBuffers over this process's memory, for the runtime's clients in tests and in the stress and
// soak clients: a heap buffer over a vector, and a memfd that the device imports as a dma-buf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <qaic/QBuffer.hpp>

namespace qaic::testing {

// A heap QBuffer over a vector's bytes.
template <typename T>
rt::QBuffer heapBuffer(std::vector<T>& data) {
  rt::QBuffer b;
  b.buf = reinterpret_cast<uint8_t*>(data.data());
  b.size = data.size() * sizeof(T);
  b.type = rt::QBUFFER_TYPE_HEAP;
  return b;
}

// A memfd of `bytes`, sealed against shrinking, and this process's mapping of it for filling and
// checking; qbuffer() names it as a dma-buf (QBUFFER_TYPE_DMABUF) that the device imports.
class MemfdBuffer {
 public:
  explicit MemfdBuffer(std::size_t bytes);
  ~MemfdBuffer();
  MemfdBuffer(const MemfdBuffer&) = delete;
  MemfdBuffer& operator=(const MemfdBuffer&) = delete;

  std::byte* data() const { return data_; }
  float* floats() const { return reinterpret_cast<float*>(data_); }
  std::size_t size() const { return bytes_; }
  int fd() const { return fd_; }
  rt::QBuffer qbuffer() const;

 private:
  std::size_t bytes_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
};

}  // namespace qaic::testing
