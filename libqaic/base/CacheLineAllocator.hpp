// SPDX-License-Identifier: Apache-2.0
// An allocator whose storage starts on a 64-byte cache line. Used where the placement matters:
// the emulator's copy of a transferred programqpc.bin (the container promises its constants that
// alignment, as a mapped file has it), and user buffers that device formats are converted into
// (the NCHW postprocess writes whole lines into a buffer that starts on one, see
// docs/formats/device-format.md).
#pragma once

#include <cstddef>
#include <new>

namespace qaic {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

}  // namespace qaic
