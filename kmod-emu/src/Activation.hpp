// SPDX-License-Identifier: Apache-2.0
// One activated program on one DBC: its window file (registers + FIFOs), device memory (the IO
// region), program, semaphores, interrupt eventfd, what it charged to the device, and the channel
// thread that serves its ring and runs its program. Created by Device::activate, torn down by
// Device::teardown (deactivate, file release, reset, removal, shutdown).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "BufferObject.hpp"
#include "ComputePool.hpp"
#include "DeviceProgram.hpp"
#include "MemoryFile.hpp"
#include "PeerGroups.hpp"
#include "Resources.hpp"
#include "Semaphores.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {

struct OpenFile;
class Channel;

// Device memory (an activation's IO region): mapped directly and, being large and streamed
// through by every DMA and program run, backed by transparent huge pages where the host allows,
// so a 64 MiB transfer does not walk 16384 page-table entries. Throws std::bad_alloc.
template <typename T>
struct DeviceMemoryAllocator {
  using value_type = T;
  DeviceMemoryAllocator() = default;
  template <typename U>
  DeviceMemoryAllocator(const DeviceMemoryAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    (void)::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without THP the pages stay small
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) { ::munmap(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const DeviceMemoryAllocator<U>&) const {
    return true;
  }
};
using DeviceRegion = std::vector<std::byte, DeviceMemoryAllocator<std::byte>>;

// DbcChannel.cpp: the ring consumer of the channel thread

struct Activation {
  Activation() = default;
  Activation(const Activation&) = delete;
  Activation& operator=(const Activation&) = delete;
  // The program goes with the last reference, on whichever thread releases it: a built program
  // is tied to no thread (its oneDNN primitives run on scratchpads the kernels own).
  ~Activation() {
    if (eventfd >= 0) ::close(eventfd);
  }

  uint32_t dbcId = 0;
  uint32_t generation = 0;
  uint32_t nelem = 0;
  uint32_t loadId = 0;
  OpenFile* owner = nullptr;  // outlives the activation (release tears it down first)
  std::unique_ptr<MemoryFile> window;
  DeviceRegion ioRegion;
  LoadBytes load;  // keeps the container (and its constants) alive while the program runs
  std::shared_ptr<DeviceProgram> program;
  int eventfd = -1;
  Semaphores semaphores;
  rt::Resources charged;                         // its own: NSPs, DBC, ..., its IO region and retained state
  uint32_t groupId = 0;                          // 0 = charged to the device's free pool
  std::shared_ptr<ResidentConstants> constants;  // its load's, counted while it lives
  // Its part of a multi-device program's peer group (null: a program of its own); its end
  // breaks the group (PeerGroups.hpp).
  std::shared_ptr<PeerMember> peer;
  // The compute lease of the run in progress, null between runs: the channel thread sets it
  // and the program's collectives, on that thread, give its cores back while they wait.
  ComputePool::Lease* runCores = nullptr;

  // Requests submitted by EXECUTE_BO: slot of their completion element -> BO (Device mutex).
  std::map<uint32_t, std::shared_ptr<BufferObject>> kernelSlots;
  // The BOs sliced to this DBC, by the handle they were attached under: the IOMMU's view, which
  // holds each BO (and its memory) until DETACH_SLICE_BO or the activation's end, whether or not
  // a handle still names it (Device mutex).
  std::map<uint32_t, std::shared_ptr<BufferObject>> slicedBos;
  uint16_t nextKernelReqId = 0;  // Device mutex

  std::atomic<bool> stopping{false};
  std::atomic<uint16_t> abortCode{driver::DBC_COMPLETION_ABORTED};
  std::shared_ptr<Channel> ring;  // set by startChannel
  std::thread channel;

  uint32_t* reg(std::size_t offset) const { return reinterpret_cast<uint32_t*>(window->data() + offset); }
  std::byte* requestFifo() const { return window->data() + driver::requestFifoOffset(nelem); }
  std::byte* responseFifo() const { return window->data() + driver::responseFifoOffset(nelem); }
};

}  // namespace qaic::emu
