// SPDX-License-Identifier: Apache-2.0
// The byte format of an emu_ioctl fuzz input, shared by the harness (which reads it) and the seed
// generator (which writes it). An input is a sequence of calls: one Op byte, then that op's
// fields in the order the harness reads them (read and written as FuzzInput.hpp says).
#pragma once

#include <cstdint>

#include "FuzzInput.hpp"

namespace qaic::fuzz {

enum class Op : uint8_t {
  Manage,  // raw qaic_manage_msg; message bytes copied to where `data` points
  CreateBo,
  MmapBo,
  AttachSlice,  // raw header; slice entries copied to where `data` points
  Execute,
  PartialExecute,
  WaitBo,
  PerfStats,
  DetachSlice,
  DbcInfo,
  RawCommand,        // any other command number, argument bytes from the input
  WellFormedManage,  // one transaction kind built by libqaic/driver's ManageMessageBuilder
  WellFormedAttach,  // slices of a created BO laid over the test program's IO region
  WellFormedExecute,
  WriteBo,  // bytes (optionally after a valid request descriptor) into a BO's memory
  Fault,    // a write to one of the device's fault files (dma_fail, nsp_hang, reset, remove)
  DrmInfo,  // VERSION, GET_UNIQUE or SET_CLIENT_NAME, their strings at a pointer spec
  GemClose,
  PrimeExport,   // HANDLE_TO_FD with a descriptor the harness opened on the BO's memory, or not
  PrimeImport,   // FD_TO_HANDLE of an export, a memfd, or another descriptor number
  GemFlinkOpen,  // GEM_FLINK a BO, then GEM_OPEN the name: a second handle
  Count
};

enum class ManageKind : uint8_t {
  Status,
  Reserve,
  ReleaseGroup,
  QueryGroup,
  Load,  // the test container, in 1 to 4 DMA_XFER pieces
  ReleaseLoad,
  Activate,
  LoadAndActivate,
  Deactivate,
  Count
};

// Where an embedded user pointer points (the first field of every pointer spec).
enum class PointerKind : uint8_t {
  Arena,  // inside the harness's arena (the common case)
  Null,
  Unmapped,      // inside a PROT_NONE reservation: EFAULT
  ArenaEnd,      // starts in the arena and runs into the PROT_NONE guard: a short copy
  NonCanonical,  // an address no process can map: EFAULT
  Count
};

// Bits of the "fix" byte most calls carry: which fields the harness replaces with values that
// the device will accept, so that mutations reach the checks behind the first ones.
inline constexpr uint8_t kFixHandle = 1u << 0;   // a handle CREATE_BO returned
inline constexpr uint8_t kFixDbc = 1u << 1;      // a DBC an activation returned
inline constexpr uint8_t kFixFields = 1u << 2;   // zero pads, a valid direction, a small count
inline constexpr uint8_t kShortArgument = 0xe0;  // all three bits: one byte short of the size

// emu_ioctl's writer: the common fields plus a pointer spec.
class InputWriter : public InputWriterBase<InputWriter> {
 public:
  InputWriter& pointer(PointerKind kind, uint16_t offset) { return op(kind).u16(offset); }
};

}  // namespace qaic::fuzz
