// SPDX-License-Identifier: Apache-2.0
// Both sides of a format conversion as the product hands them to the kernels: page-aligned and
// zeroed (so every page is mapped before timing starts). On the device side, libqaic converts
// into and out of its staging BOs, whose slices start on page boundaries (ProgramLayout), and the
// emulator at BO offsets in device memory. On the user side, qaic-runner's output buffers start
// on a cache line (CacheLineAllocator). A std::vector's data starts wherever malloc puts it (16
// bytes past a line when it maps the block), which moves the conversions' rates by up to a
// quarter (docs/formats/device-format.md).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

namespace qaic::bench {

class PageAlignedBuffer {
 public:
  explicit PageAlignedBuffer(std::size_t bytes)
      : bytes_(bytes), data_(static_cast<std::byte*>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage))) {
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_.get(), 0, bytes_);
  }
  std::span<std::byte> span() const { return {data_.get(), bytes_}; }
  std::byte* data() const { return data_.get(); }

 private:
  static constexpr std::size_t kPage = 4096;
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::size_t bytes_;
  std::unique_ptr<std::byte[], Free> data_;
};

}  // namespace qaic::bench
