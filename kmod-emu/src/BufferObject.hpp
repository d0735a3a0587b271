// A buffer object: a memory file the client and the device both map, plus its slicing (one DBC,
// one direction) and the state of its last EXECUTE_BO submission. Mutable fields are guarded by
// the owning Device's mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "MemoryFile.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::emu {

using Clock = std::chrono::steady_clock;

struct BufferObject {
  enum class State { Idle, Queued, Done };

  uint32_t handle = 0;
  uint64_t size = 0;        // as requested
  uint64_t mmapOffset = 0;
  std::unique_ptr<MemoryFile> memory;  // page-rounded size

  bool sliced = false;
  uint32_t dbcId = 0;
  uint32_t dir = 0;  // QAIC_DIR_*
  std::vector<qaic_attach_slice_entry> slices;

  State state = State::Idle;
  uint16_t completionCode = 0;
  uint32_t queueLevelBefore = 0;
  uint32_t queuedElements = 0;
  Clock::time_point ioctlEntry{};
  Clock::time_point submitted{};
  Clock::time_point completed{};
};

}  // namespace qaic::emu
