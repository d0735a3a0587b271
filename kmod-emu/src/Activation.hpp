// One activated program on one DBC: its window file (registers + FIFOs), device memory (the IO
// region), program, semaphores, interrupt eventfd, what it charged to the device, and the
// channel thread that serves its ring. Created by Device::activate, torn down by
// Device::teardown (deactivate, file release, reset, removal, shutdown).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "BufferObject.hpp"
#include "DeviceProgram.hpp"
#include "MemoryFile.hpp"
#include "NspPool.hpp"
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
  bool operator==(const DeviceMemoryAllocator<U>&) const { return true; }
};
using DeviceRegion = std::vector<std::byte, DeviceMemoryAllocator<std::byte>>;

// DbcChannel.cpp: the ring consumer state shared by the channel thread and the NSP

struct Activation : std::enable_shared_from_this<Activation> {
  ~Activation();

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
  NspPool* pool = nullptr;  // the program is built, run and destroyed on `worker` of `pool`
  unsigned worker = 0;
  Semaphores semaphores;
  ResourceCounts charged;
  uint32_t groupId = 0;  // 0 = charged to the device's free pool

  // Requests submitted by EXECUTE_BO: slot of their completion element -> BO (Device mutex).
  std::map<uint32_t, std::shared_ptr<BufferObject>> kernelSlots;
  uint16_t nextKernelReqId = 0;  // Device mutex

  std::mutex runMutex;  // one program run at a time (HostProgram is not re-entrant)
  std::atomic<bool> programBusy{false};
  std::atomic<uint16_t> programStatus{0};

  std::atomic<bool> stopping{false};
  std::atomic<uint16_t> abortCode{driver::DBC_COMPLETION_ABORTED};
  std::shared_ptr<Channel> ring;  // set by startChannel
  std::thread channel;

  uint32_t* reg(std::size_t offset) const {
    return reinterpret_cast<uint32_t*>(window->data() + offset);
  }
  std::byte* requestFifo() const { return window->data() + driver::requestFifoOffset(nelem); }
  std::byte* responseFifo() const { return window->data() + driver::responseFifoOffset(nelem); }
};

}  // namespace qaic::emu
