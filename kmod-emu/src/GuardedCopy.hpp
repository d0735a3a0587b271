// SPDX-License-Identifier: Apache-2.0
// Copies to or from memory a client shares with the emulator (a BO's memory file, an imported
// memfd). The client owns that file and may truncate it under the emulator's mapping; an access
// past the new end raises SIGBUS, which would kill the emulator and every client with it. The
// copy catches that fault on its own thread and reports it instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <span>
#include <vector>

namespace qaic::emu {

// memcpy(to, from, bytes); false when a page of either side faulted (SIGBUS), in which case a
// part of the bytes may have been copied. Safe to call from any number of threads.
bool guardedCopy(void* to, const void* from, std::size_t bytes);

// Client memory that a program run reads or writes in place, on whichever threads its kernels
// use, for as long as the object lives. A SIGBUS inside it (the client truncated its file under
// the run) maps a zero page over the missing one, so the kernels carry on, and faulted() turns
// true: the run's result is then worthless and the request fails with DMA_FAILED. The mapping
// keeps that zero page afterwards, so the memory must not be used again (BufferMemory::damage).
class InPlaceAccess {
 public:
  explicit InPlaceAccess(std::span<const std::span<std::byte>> ranges);
  ~InPlaceAccess();
  InPlaceAccess(const InPlaceAccess&) = delete;
  InPlaceAccess& operator=(const InPlaceAccess&) = delete;
  // False when range `i` could not be guarded (too many at once): do not touch it in place.
  bool guarded(std::size_t i) const { return i < slots_.size() && slots_[i] >= 0; }
  // True when a page of range `i` faulted.
  bool faulted(std::size_t i) const;

 private:
  std::vector<int> slots_;  // the ranges' entries in the handler's table, -1 when it was full
};

}  // namespace qaic::emu
