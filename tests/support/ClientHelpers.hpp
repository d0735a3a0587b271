// SPDX-License-Identifier: Apache-2.0
// Test and benchmark helper: what a client does with a raw device node to run a program —
// transfer and activate a container, map the DBC window, create and map BOs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "RawDevice.hpp"

namespace qaic::testing {

// A mapped memory file (BO or DBC window), unmapped when destroyed.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  bool map(const std::string& path, std::size_t bytes);
  // Maps `bytes` of an open descriptor at `offset` (a device node at a BO's MMAP_BO offset).
  bool mapAt(int fd, std::size_t bytes, uint64_t offset);
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

struct Bo {
  uint32_t handle = 0;
  uint64_t size = 0;
  Mapping map;
};

// CREATE_BO + MMAP_BO + mmap of the node at the offset (or, from an emulator without FUSE
// passthrough, of memory-accel<nodeIndex> in shmDir at the offset); 0 or an errno.
int createMappedBo(RawDevice& dev, const std::string& shmDir, uint64_t size, Bo& bo, unsigned nodeIndex = 0);

// DMA_XFER of `container` as load `loadId`, then ACTIVATE_FROM_USR; 0 or the MANAGE errno.
int transferAndActivate(RawDevice& dev, const std::vector<std::byte>& container, uint32_t loadId, uint32_t queueSize,
                        int eventfd, uint32_t& dbcId);

// ATTACH_SLICE_BO with one slice.
int attachOneSlice(RawDevice& dev, uint32_t dbcId, const Bo& bo, uint32_t dir, const qaic_attach_slice_entry& entry);

}  // namespace qaic::testing
