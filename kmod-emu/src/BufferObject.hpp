// SPDX-License-Identifier: Apache-2.0
// A buffer object, the emulator's GEM object: its memory (created by CREATE_BO or imported by
// PRIME_FD_TO_HANDLE), its slicing (one DBC, one direction) and the state of its last EXECUTE_BO
// submission. Like the kernel's object it has several holders, each a shared_ptr: the handles
// naming it in open files, the activation it is sliced to (until DETACH_SLICE_BO or the end of
// that activation) and a submission not yet completed. GEM_CLOSE drops only the handle; the
// object, and with it its memory, goes with the last holder. Mutable fields are guarded by the
// owning Device's mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "BufferMemory.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::emu {

using Clock = std::chrono::steady_clock;

struct BufferObject {
  enum class State { Idle, Queued, Done };

  uint64_t size = 0;        // as requested, or the imported file's size
  uint64_t mmapOffset = 0;  // CREATE_BO's fake offset; 0 for an import (MMAP_BO is EINVAL)
  std::shared_ptr<BufferMemory> memory;
  uint32_t handles = 0;    // handles naming it in open files (a flink name lives as long)
  uint32_t flinkName = 0;  // GEM_FLINK's global name, 0 while it has none

  bool sliced = false;
  uint32_t dbcId = 0;
  uint32_t dir = 0;          // QAIC_DIR_*
  uint32_t sliceHandle = 0;  // the handle it was attached under: its IOVAs carry this one
  std::vector<qaic_attach_slice_entry> slices;

  State state = State::Idle;
  uint16_t completionCode = 0;
  uint32_t queueLevelBefore = 0;
  uint32_t queuedElements = 0;
  Clock::time_point ioctlEntry{};
  Clock::time_point submitted{};
  Clock::time_point completed{};

  bool imported() const { return mmapOffset == 0; }
};

}  // namespace qaic::emu
