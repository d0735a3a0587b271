// SPDX-License-Identifier: Apache-2.0
// The emu_ioctl harness: one emulated Device driven in-process (no FUSE) by a sequence of ioctl
// calls decoded from a fuzz input (EmuIoctlInput.hpp). The device reads and writes "the
// caller's memory" with process_vm_readv/writev on this very process, so every user pointer in
// a fixed argument points into the harness's own arena (whose bytes come from the input), into a
// PROT_NONE reservation, or at an address no process can map: a device write can never land on
// the harness's own data. (DMA addresses inside manage messages stay as the input has them: the
// device only reads there.)
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "Device.hpp"
#include "EmuIoctlInput.hpp"
#include "MemoryFile.hpp"

namespace qaic::fuzz {

class EmuIoctlHarness {
 public:
  EmuIoctlHarness();
  ~EmuIoctlHarness();
  EmuIoctlHarness(const EmuIoctlHarness&) = delete;
  EmuIoctlHarness& operator=(const EmuIoctlHarness&) = delete;

  // One input: a fresh Device and open file, the calls, then release (nothing survives).
  void run(const uint8_t* data, std::size_t size);

  static constexpr std::size_t kArenaBytes = 64 * 1024;
  static constexpr std::size_t kGuardBytes = 64 * 1024;
  // Larger accepted BO sizes only cost /dev/shm pages (each BO is fallocated) on a shared host.
  static constexpr uint64_t kMaxBoBytes = 256 * 1024;
  static constexpr std::size_t kMaxCalls = 64;

 private:
  struct Bo {
    uint32_t handle;
    uint64_t size;
    std::optional<uint32_t> dbc;  // attached to
    uint32_t dir = 0;
  };
  struct Session;  // per-input state

  void call(Session& s, InputReader& in);
  int ioctl(Session& s, unsigned cmd, const void* arg, std::size_t size, void* out, bool shortArgument);

  uint64_t pointer(InputReader& in);
  // Copies `n` input bytes to `address` when it lies in the arena (clipped at its end).
  void fillArena(InputReader& in, uint64_t address, std::size_t n);
  std::byte* arenaAt(uint64_t address, std::size_t n);

  void rawManage(Session& s, InputReader& in);
  void createBo(Session& s, InputReader& in);
  void mmapBo(Session& s, InputReader& in);
  void attachSlice(Session& s, InputReader& in);
  void execute(Session& s, InputReader& in, bool partial);
  void waitBo(Session& s, InputReader& in);
  void perfStats(Session& s, InputReader& in);
  void detachSlice(Session& s, InputReader& in);
  void dbcInfo(Session& s, InputReader& in);
  void rawCommand(Session& s, InputReader& in);
  void wellFormedManage(Session& s, InputReader& in);
  void wellFormedAttach(Session& s, InputReader& in);
  void wellFormedExecute(Session& s, InputReader& in);
  void writeBo(Session& s, InputReader& in);
  void fault(Session& s, InputReader& in);
  void drmInfo(Session& s, InputReader& in);
  void gemClose(Session& s, InputReader& in);
  void primeExport(Session& s, InputReader& in);
  void primeImport(Session& s, InputReader& in);
  void gemFlinkOpen(Session& s, InputReader& in);
  // Sends the manage message in the arena; on success records the DBCs and groups it answered.
  int sendManage(Session& s, uint64_t address, uint32_t len, uint32_t count);

  std::unique_ptr<emu::ShmDirectory> shm_;
  emu::ProgramLoader loader_;
  std::atomic<uint64_t> nextMmapOffset_;
  std::vector<std::byte> container_;  // a valid programqpc.bin (the relu test program)
  std::byte* arena_ = nullptr;        // kArenaBytes read-write, then kGuardBytes PROT_NONE
  int eventfd_ = -1;
};

}  // namespace qaic::fuzz
