// SPDX-License-Identifier: Apache-2.0
// The device protocol of docs/device-protocol.md as types and constants: what the uAPI leaves to
// firmware and to the emulator (memory files, IO virtual addresses, the DBC window and its
// registers, request/response elements, descriptors, completion codes, the manage-message
// encodings of program loads and resource groups, and the emulator's one extension ioctl).
// Shared by qaic-emu (the device) and libqaic (the host); any layout drift is a compile error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <qaic/Resources.hpp>

#include "qaic/uapi/qaic_accel.h"

namespace qaic::driver {

// ---- 1. Memory files ---------------------------------------------------------------------------
inline constexpr std::size_t kPageSize = 4096;
inline constexpr const char* kDeviceMemoryFilePrefix = "memory-accel";
inline constexpr unsigned kShmDirMode = 0711;  // others may traverse but not list
inline constexpr unsigned kMemoryFileMode = 0600;
// "instance.lock" inside emu_shm_dir: the running emulator holds its lock (base/InstanceLock.hpp)
// for as long as it lives, so a client sees a killed emulator's devices as gone at once, and a new
// emulator removes the directories of dead ones, zombie or not.
inline constexpr const char* kInstanceLockName = "instance.lock";
inline constexpr unsigned kInstanceLockMode = 0644;

constexpr uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// "memory-accel<N>" inside the instance's emu_shm_dir: the sparse file that holds the pages of
// every BO created through node accel<N> (a device's, or a partition's: N is then its id), each
// at file offset == its MMAP_BO offset. It is the node's FUSE passthrough backing file.
inline std::string deviceMemoryFileName(unsigned nodeIndex) {
  return kDeviceMemoryFilePrefix + std::to_string(nodeIndex);
}

// MMAP_BO offsets: page aligned, start above zero so 0 is never a valid offset.
inline constexpr uint64_t kFirstMmapOffset = 0x100000000ull;

// ---- 2. IO virtual addresses -------------------------------------------------------------------
// Host-side addresses in request elements: bit 63 | handle << 32 | offset in the BO. A BO can
// therefore be addressed up to 4 GiB. Anything without bit 63 is a device-side address (an
// offset in the activation's IO region).
inline constexpr uint64_t kIovaHostBit = 1ull << 63;
inline constexpr uint64_t kMaxBoBytes = 1ull << 32;

constexpr uint64_t makeIova(uint32_t boHandle, uint32_t offsetInBo) {
  return kIovaHostBit | (static_cast<uint64_t>(boHandle & 0x7fffffffu) << 32) | offsetInBo;
}
constexpr bool iovaIsHost(uint64_t address) { return (address & kIovaHostBit) != 0; }
constexpr uint32_t iovaHandle(uint64_t address) { return static_cast<uint32_t>((address >> 32) & 0x7fffffffu); }
constexpr uint32_t iovaOffset(uint64_t address) { return static_cast<uint32_t>(address); }

// ---- 3. The DBC window: registers and FIFOs ----------------------------------------------------
inline constexpr std::size_t kRegisterPageBytes = 4096;
inline constexpr std::size_t kRegRequestHead = 0x0;     // device writes
inline constexpr std::size_t kRegRequestTail = 0x4;     // host writes: the doorbell
inline constexpr std::size_t kRegResponseHead = 0x8;    // host writes
inline constexpr std::size_t kRegResponseTail = 0xC;    // device writes
inline constexpr std::size_t kRegDoorbellFutex = 0x10;  // host increments + FUTEX_WAKE
inline constexpr std::size_t kRegDeviceStatus = 0x14;   // device writes, DeviceStatus
// Device sets: nonzero while the channel may sleep on the doorbell futex, so a doorbell needs
// FUTEX_WAKE; zero while it processes the ring, so the doorbell skips the syscall. The host
// thread whose doorbell finds it nonzero clears it (an atomic exchange) and makes the one wake-up
// call; the device sets it again before every sleep.
inline constexpr std::size_t kRegDeviceSleeping = 0x18;
// Host writes: how many host threads wait on the response futex below instead of the eventfd.
// While it is nonzero the device, when the response FIFO goes from empty to non-empty, bumps the
// response futex word and FUTEX_WAKEs it instead of writing the eventfd, so the waiting thread
// is woken directly and drains the FIFO itself (docs/device-protocol.md section 3).
inline constexpr std::size_t kRegHostWaiting = 0x1C;
// Device increments (then FUTEX_WAKE when kRegHostWaiting is nonzero); host threads FUTEX_WAIT.
inline constexpr std::size_t kRegResponseFutex = 0x20;
// The polling data path (module parameter datapath_polling). Device writes: nonzero when the
// channel finds requests by polling the tail instead of sleeping on the doorbell futex, so host
// waits spin too before they sleep.
inline constexpr std::size_t kRegDatapathPolling = 0x24;
// Device writes: datapath_poll_interval_us, the polling period, and how long a host wait spins.
inline constexpr std::size_t kRegPollIntervalUs = 0x28;
// Host writes: how many host threads spin on the response tail. While it is nonzero and
// kRegHostWaiting is zero the device signals nothing for a response: a spinning thread finds it.
inline constexpr std::size_t kRegHostPolling = 0x2C;

enum class DeviceStatus : uint32_t { Ok = 0, Resetting = 1, Removed = 2, Stopped = 3 };

inline constexpr std::size_t kRequestElementBytes = 64;
inline constexpr std::size_t kResponseElementBytes = 4;
inline constexpr uint32_t kMinQueueSize = 2;
inline constexpr uint32_t kMaxQueueSize = 65535;  // req_id is 16 bits
inline constexpr uint32_t kDefaultQueueSize = 256;

// The FIFO area as the mainline driver sizes it: requests at its start, responses at its end.
constexpr uint64_t fifoAreaBytes(uint32_t nelem) {
  return alignUp(uint64_t{nelem} * (kRequestElementBytes + kResponseElementBytes) + 256, 4096);
}
constexpr uint64_t dbcWindowBytes(uint32_t nelem) { return kRegisterPageBytes + fifoAreaBytes(nelem); }
constexpr uint64_t requestFifoOffset(uint32_t) { return kRegisterPageBytes; }
constexpr uint64_t responseFifoOffset(uint32_t nelem) {
  return dbcWindowBytes(nelem) - uint64_t{nelem} * kResponseElementBytes;
}

// A ring holds at most nelem - 1 elements (head == tail means empty).
constexpr uint32_t ringUsed(uint32_t head, uint32_t tail, uint32_t nelem) { return (tail + nelem - head) % nelem; }
constexpr uint32_t ringFree(uint32_t head, uint32_t tail, uint32_t nelem) {
  return nelem - 1 - ringUsed(head, tail, nelem);
}

// Request element `cmd` bits.
inline constexpr uint8_t kReqCmdToDevice = 1u << 0;    // src host IOVA -> dst device address
inline constexpr uint8_t kReqCmdFromDevice = 1u << 1;  // src device address -> dst host IOVA
inline constexpr uint8_t kReqCmdCompletion = 1u << 4;  // last element of a request: respond

// Semaphore command word (sem_cmd0..3): val 0-11, index 16-20, presync 22, cmd 24-26,
// outsync fence 29, insync fence 30, enable 31.
inline constexpr uint32_t kSemEnable = 1u << 31;
constexpr uint32_t encodeSem(const qaic_sem& s) {
  if (s.cmd == QAIC_SEM_NOP) return 0;
  return (uint32_t{s.val} & 0xfffu) | ((uint32_t{s.index} & 0x1fu) << 16) | (s.presync ? 1u << 22 : 0u) |
         ((uint32_t{s.cmd} & 0x7u) << 24) | ((s.flags & QAIC_SEM_OUTSYNCFENCE) ? 1u << 29 : 0u) |
         ((s.flags & QAIC_SEM_INSYNCFENCE) ? 1u << 30 : 0u) | kSemEnable;
}
constexpr uint16_t semVal(uint32_t w) { return static_cast<uint16_t>(w & 0xfffu); }
constexpr uint8_t semIndex(uint32_t w) { return static_cast<uint8_t>((w >> 16) & 0x1fu); }
constexpr bool semPresync(uint32_t w) { return (w >> 22) & 1u; }
constexpr uint8_t semCmd(uint32_t w) { return static_cast<uint8_t>((w >> 24) & 0x7u); }
constexpr bool semEnabled(uint32_t w) { return (w & kSemEnable) != 0; }
inline constexpr uint32_t kSemaphoresPerDbc = 32;
inline constexpr uint32_t kSemaphoreMax = 0xfff;

// One request element (64 bytes, little endian), the layout of the mainline driver's dbc_req.
struct RequestElement {
  uint16_t reqId;  // same for every element of one request
  uint8_t seqId;
  uint8_t cmd;  // kReqCmd*
  uint32_t reserved0;
  uint64_t srcAddr;
  uint64_t dstAddr;
  uint32_t length;  // bytes; 0 = no transfer (semaphores / doorbell only)
  uint32_t reserved1;
  uint64_t dbAddr;  // device address written after the transfer
  uint8_t dbLen;    // 32, 16, 8 or 0 (no doorbell)
  uint8_t reserved2;
  uint16_t reserved3;
  uint32_t dbData;
  uint32_t semCmd[4];
};
static_assert(sizeof(RequestElement) == kRequestElementBytes, "request element is 64 bytes");
static_assert(offsetof(RequestElement, srcAddr) == 8 && offsetof(RequestElement, dbAddr) == 32 &&
                  offsetof(RequestElement, dbData) == 44 && offsetof(RequestElement, semCmd) == 48,
              "request element layout");

struct ResponseElement {
  uint16_t reqId;
  uint16_t completionCode;  // CompletionCode
};
static_assert(sizeof(ResponseElement) == kResponseElementBytes, "response element is 4 bytes");

// ---- 4. Request and response descriptors -------------------------------------------------------
inline constexpr uint64_t kRequestDescriptorOffset = 0;
inline constexpr uint64_t kResponseDescriptorOffset = 4096;
inline constexpr uint64_t kDescriptorBytes = 4096;
inline constexpr uint32_t kRequestDescriptorMagic = 0x51524551;   // "QREQ"
inline constexpr uint32_t kResponseDescriptorMagic = 0x51525350;  // "QRSP"
inline constexpr uint32_t kDescriptorVersion = 1;
inline constexpr uint32_t kDescriptorMaxRank = 8;

struct RequestDescriptorHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t bufferCount;
  uint32_t sequence;
};
struct RequestDescriptorEntry {
  uint32_t present;
  uint32_t rank;
  uint32_t dims[kDescriptorMaxRank];
};
struct ResponseDescriptorHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t status;  // CompletionCode
  uint32_t bufferCount;
};
struct ResponseDescriptorEntry {
  uint32_t present;
  uint32_t rank;
  uint32_t dims[kDescriptorMaxRank];
  uint32_t bytes;
};
static_assert(sizeof(RequestDescriptorHeader) == 16 && sizeof(RequestDescriptorEntry) == 40);
// The request descriptor page's last word: flags of the request (0 in older runtimes, which
// zero the page).
inline constexpr uint64_t kRequestFlagsOffset = kDescriptorBytes - sizeof(uint32_t);
inline constexpr uint32_t kRequestFlagResetState = 1u << 0;  // zero the activation's retained state first
inline constexpr uint32_t kRequestKnownFlags = kRequestFlagResetState;
static_assert(sizeof(ResponseDescriptorHeader) == 16 && sizeof(ResponseDescriptorEntry) == 44);
inline constexpr uint32_t kMaxDescriptorBuffers = (kDescriptorBytes - sizeof(ResponseDescriptorHeader)) /
                                                  sizeof(ResponseDescriptorEntry);
// After the room for kMaxDescriptorBuffers entries: when the program ran, in nanoseconds of the
// host's CLOCK_MONOTONIC (std::chrono::steady_clock), so the runtime can tell the input transfer,
// the run and the output transfer apart (seed 002's stages). 0 when the device does not report
// them (the runtime then counts the whole time on the ring as execution).
struct ResponseTimestamps {
  uint64_t programStartNs;  // inputs are on the device, the program starts
  uint64_t programEndNs;    // the program ended; the outputs' transfer follows
};
inline constexpr uint64_t kResponseTimestampsOffset = sizeof(ResponseDescriptorHeader) +
                                                      uint64_t{kMaxDescriptorBuffers} * sizeof(ResponseDescriptorEntry);
static_assert(kResponseTimestampsOffset + sizeof(ResponseTimestamps) <= kDescriptorBytes);
static_assert(sizeof(RequestDescriptorHeader) + uint64_t{kMaxDescriptorBuffers} * sizeof(RequestDescriptorEntry) <=
              kRequestFlagsOffset);
// A response whose status is PROGRAM_FAILED says why after its entries: a u32 byte count, then
// that much UTF-8 text (the failing op and, for a bad index, the index), cut where the program
// times begin (kResponseDiagnosticEnd).
constexpr uint64_t responseDiagnosticOffset(uint32_t bufferCount) {
  return sizeof(ResponseDescriptorHeader) + uint64_t{bufferCount} * sizeof(ResponseDescriptorEntry);
}
inline constexpr uint64_t kResponseDiagnosticEnd = kResponseTimestampsOffset;

// ---- 5. Completion codes -----------------------------------------------------------------------
enum class CompletionCode : uint16_t {
  Success = 0,
  BadAddress = 1,
  BadRequest = 2,
  DmaFailed = 3,
  SemaphoreTimeout = 4,
  NspHang = 5,
  DeviceReset = 6,
  Aborted = 7,
  ProgramFailed = 8,  // the program's executor failed (e.g. an operator rejected its input)
};
inline constexpr uint16_t DBC_COMPLETION_SUCCESS = 0;
inline constexpr uint16_t DBC_COMPLETION_BAD_ADDRESS = 1;
inline constexpr uint16_t DBC_COMPLETION_BAD_REQUEST = 2;
inline constexpr uint16_t DBC_COMPLETION_DMA_FAILED = 3;
inline constexpr uint16_t DBC_COMPLETION_SEMAPHORE_TIMEOUT = 4;
inline constexpr uint16_t DBC_COMPLETION_NSP_HANG = 5;
inline constexpr uint16_t DBC_COMPLETION_DEVICE_RESET = 6;
inline constexpr uint16_t DBC_COMPLETION_ABORTED = 7;
inline constexpr uint16_t DBC_COMPLETION_PROGRAM_FAILED = 8;

inline const char* completionCodeName(uint16_t code) {
  switch (code) {
    case 0: return "SUCCESS";
    case 1: return "BAD_ADDRESS";
    case 2: return "BAD_REQUEST";
    case 3: return "DMA_FAILED";
    case 4: return "SEMAPHORE_TIMEOUT";
    case 5: return "NSP_HANG";
    case 6: return "DEVICE_RESET";
    case 7: return "ABORTED";
    case 8: return "PROGRAM_FAILED";
    default: return "UNKNOWN";
  }
}

// ---- 6. Manage messages: program loads, activation options, resource groups -------------------
// A program container reaches the device as DMA_XFER_FROM_USR transactions (struct
// qaic_manage_trans_dma_xfer) whose `tag` is a load id (nonzero, chosen by the caller, unique per
// open file). The first transfer with a new tag creates the load; further DMA_XFER_FROM_USR or
// DMA_XFER_CONT transactions with the same tag append to it in order. A transfer with size 0
// releases the load. ACTIVATE_FROM_USR names the load in `options`.
inline constexpr uint32_t kLoadIdMask = 0x00ffffffu;
constexpr uint32_t makeActivateOptions(uint32_t loadId, uint32_t programIndex) {
  return (loadId & kLoadIdMask) | ((programIndex & 0xffu) << 24);
}
constexpr uint32_t activateLoadId(uint32_t options) { return options & kLoadIdMask; }
constexpr uint32_t activateProgramIndex(uint32_t options) { return options >> 24; }
// ACTIVATE_FROM_USR's `pad` (zero on mainline's wire) names the resource group the activation
// draws from: 0 for the file's unnamed groups or, without any, its pool; else a group of the file.
constexpr uint32_t activateResourceGroup(const qaic_manage_trans_activate_to_dev& t) { return t.pad; }

// The response transactions written back over the caller's message buffer (which must have room
// for QAIC_MANAGE_MAX_MSG_LENGTH bytes, as with the mainline driver): one per request
// transaction that has an answer, in order. PASSTHROUGH_FROM_USR -> PASSTHROUGH_TO_USR (same
// length, data replaced by the answer), ACTIVATE_FROM_USR -> ACTIVATE_FROM_DEV,
// DEACTIVATE_FROM_USR -> DEACTIVATE_FROM_DEV, STATUS_FROM_USR -> STATUS_TO_USR (a
// qaic_manage_trans_status_from_dev). DMA transfers have no answer. The message's len and count
// are updated in the ioctl argument.
// The vendor's firmware commands share the passthrough transaction: VendorManage.hpp.

// Resource-group reservation, the payload of a PASSTHROUGH_FROM_USR transaction. Reserve takes
// the resources from the device for this open file (an activation then draws from its group
// first and cannot exceed it); release gives them back (also done when the file closes).
// ReserveNamed takes them the same way for the activations that name the group in ACTIVATE's
// `pad` (activateResourceGroup): others of the file neither see nor draw from it, so several
// users of one open file (a runtime's inference sets) each hold exactly their own activations.
inline constexpr uint32_t kResourceGroupMagic = 0x53455251;  // "QRES"
inline constexpr uint32_t kResourceGroupVersion = 1;
enum class ResourceGroupOp : uint32_t { Reserve = 1, Release = 2, Query = 3, ReserveNamed = 4 };

struct ResourceGroupRequest {
  uint32_t magic;
  uint32_t version;
  uint32_t op;       // ResourceGroupOp
  uint32_t groupId;  // release/query: the group; reserve: 0
  rt::Resources resources;
};
struct ResourceGroupResponse {
  uint32_t magic;
  uint32_t version;
  int32_t status;           // 0 or a negative errno (-ENOSPC when the device lacks the resources)
  uint32_t groupId;         // reserve: the new group
  rt::Resources resources;  // reserve/query: what the group holds; release: 0
};
static_assert(sizeof(ResourceGroupRequest) == 40 && sizeof(ResourceGroupResponse) == 40,
              "request and response have the same size so the answer fits in place");
static_assert(sizeof(rt::Resources) == 24 && offsetof(ResourceGroupRequest, resources) == 16 &&
                  offsetof(ResourceGroupResponse, resources) == 16,
              "numNsp, numMcid, numSem, numVc (u32 each) and ddrSize (u64) at bytes 16 to 40");

// Partitions (derived devices), the payload of a PASSTHROUGH_FROM_USR transaction told apart
// from a resource-group request by its magic. Only a privileged caller (uid 0, or the uid the
// emulator runs as) may create or remove them: that is qaicd. Create takes the resources from the
// parent device's free pool (not from the caller's open file) and publishes a derived device node
// dev/accel/accel<id> (id >= kFirstPartitionId) with owner `ownerUid`:`ownerGid` and `mode`, plus
// its class directory sys/class/accel/accel<id>/ whose *_total/*_free attributes are the
// partition's and whose qaic-emu/partition/ files say who holds it. The partition outlives the
// creator's open file (so qaicd can restart); Remove, a device reset or a device removal ends it,
// aborting every activation made through its node. An open file of a partition node draws every
// activation from the partition and cannot exceed it.
inline constexpr uint32_t kPartitionMagic = 0x54525051;  // "QPRT"
inline constexpr uint32_t kPartitionVersion = 1;
inline constexpr uint32_t kFirstPartitionId = 100;
enum class PartitionOp : uint32_t { Create = 1, Remove = 2 };

struct PartitionRequest {
  uint32_t magic;
  uint32_t version;
  uint32_t op;           // PartitionOp
  uint32_t partitionId;  // remove: the derived device id; create: 0
  rt::Resources resources;
  uint32_t ownerUid;  // who may open the node
  uint32_t ownerGid;
  uint32_t mode;      // permission bits of the node: 0600 (a user) or 0660 (a group)
  int32_t holderPid;  // the lease holder, recorded for re-adoption (0 = static partition)
  char label[32];     // NUL-terminated, printable; shown in qaic-emu/partition/label
};
struct PartitionResponse {
  uint32_t magic;
  uint32_t version;
  int32_t status;           // 0 or a negative errno: -ENOSPC (a resource short; `shortResource`
                            // names it), -ENOENT (no such partition), -EPERM (caller not
                            // privileged)
  uint32_t partitionId;     // create: the new derived device id
  rt::Resources resources;  // create: what the partition holds
  uint32_t shortResource;   // create refused with -ENOSPC: 1 nsp, 2 mcid, 3 sem, 4 vc, 5 ddr
  uint8_t padding[44];
};
static_assert(sizeof(PartitionRequest) == 88 && sizeof(PartitionResponse) == 88,
              "request and response have the same size so the answer fits in place");
static_assert(offsetof(PartitionRequest, resources) == 16 && offsetof(PartitionRequest, ownerUid) == 40 &&
                  offsetof(PartitionResponse, resources) == 16 && offsetof(PartitionResponse, shortResource) == 40,
              "partition request and response layout");
enum class PartitionResource : uint32_t { None = 0, Nsp = 1, Mcid = 2, Sem = 3, Vc = 4, Ddr = 5 };

// The device status query, the payload of a PASSTHROUGH_FROM_USR transaction told apart by its
// magic: what the firmware reports about itself, as the vendor's tools read it (qaic-util -q,
// qaicd). Sent on a partition's node it reports the partition: its capacity and what is free of
// it, and the networks of the files opened on it. Any caller that may open the node may ask.
inline constexpr uint32_t kDeviceStatusMagic = 0x41545351;  // "QSTA"
inline constexpr uint32_t kDeviceStatusVersion = 1;
enum class FirmwareState : uint32_t { Initializing = 0, Ready = 1, Error = 2 };
// How qaic-util and the emulator's status file name the state; an unknown value is an error state.
inline const char* firmwareStateName(uint32_t state) {
  switch (static_cast<FirmwareState>(state)) {
    case FirmwareState::Initializing: return "Initializing";
    case FirmwareState::Ready: return "Ready";
    case FirmwareState::Error: return "Error";
  }
  return "Error";
}

struct DeviceStatusRequest {
  uint32_t magic;
  uint32_t version;
  uint8_t padding[232];  // zero; the answer is written in place
};
struct DeviceStatusResponse {
  uint32_t magic;
  uint32_t version;
  int32_t status;          // 0, or a negative errno
  uint32_t firmwareState;  // FirmwareState
  uint32_t nspTotal, nspFree;
  uint32_t mcidTotal, mcidFree;
  uint32_t semTotal, semFree;
  uint32_t vcTotal, vcFree;  // virtual channels = DBCs
  uint64_t ddrTotalBytes, ddrFreeBytes;
  uint32_t networksLoaded;   // program loads held by open files
  uint32_t networksActive;   // activations
  uint32_t constantsLoaded;  // loads with constants that an activation uses
  uint32_t constantsInUse;   // activations whose program has constants
  uint32_t nspFrequencyMhz;
  uint32_t reserved;
  char fwVersion[32];  // NUL-terminated
  char hwVersion[32];
  char sku[64];
  uint8_t padding[24];
};
static_assert(sizeof(DeviceStatusRequest) == 240 && sizeof(DeviceStatusResponse) == 240,
              "request and response have the same size so the answer fits in place");
// The report's resources (on a partition's node: the partition's), as the one resources type.
inline rt::Resources totalResources(const DeviceStatusResponse& r) {
  return rt::Resources{r.nspTotal, r.mcidTotal, r.semTotal, r.vcTotal, r.ddrTotalBytes};
}
inline rt::Resources freeResources(const DeviceStatusResponse& r) {
  return rt::Resources{r.nspFree, r.mcidFree, r.semFree, r.vcFree, r.ddrFreeBytes};
}

// Peer groups (multi-device programs), the payload of a PASSTHROUGH_FROM_USR transaction told
// apart by its magic: "the ACTIVATE_FROM_USR transaction right after this one activates part
// `part` of `parts` of peer group `token`". A multi-device program is N single-device programs,
// one per card, whose collectives (all_reduce_sum, all_gather) exchange data with one another:
// the N activations naming one token run their inferences together, the data moving between
// the cards, never through a client. The token is the runtime's choice (nonzero, unique per
// program among the instance's running groups); the group lives while any part's activation
// does. The answer (same size, written in place) says whether the part joined; a refused part
// is not activated: its ACTIVATE_FROM_DEV carries the errno as `status` and DBC 0, and the
// answer's `message` says why, naming the devices. A request not followed by ACTIVATE_FROM_USR
// makes the whole message EINVAL. docs/device-protocol.md section 7, "Peer groups".
inline constexpr uint32_t kPeerGroupMagic = 0x52475051;  // "QPGR"
inline constexpr uint32_t kPeerGroupVersion = 1;
struct PeerGroupRequest {
  uint32_t magic;
  uint32_t version;
  uint64_t token;        // nonzero
  uint32_t part;         // 0 .. parts - 1
  uint32_t parts;        // >= 1, the same for every part
  uint8_t padding[216];  // zero; the answer is written in place
};
struct PeerGroupResponse {
  uint32_t magic;
  uint32_t version;
  // 0 (joined), or a negative errno: -EINVAL (a zero token, a part out of range, a part count
  // other than the group's), -EBUSY (the part is active already), -EXDEV (the device is not in
  // the P2P group of the group's other devices), -ECANCELED (the group was broken by a part's
  // end or fault and still has parts active).
  int32_t status;
  uint32_t part;
  uint64_t token;
  char message[216];  // NUL-terminated; empty when joined
};
static_assert(sizeof(PeerGroupRequest) == 240 && sizeof(PeerGroupResponse) == 240,
              "request and response have the same size so the answer fits in place");

// ---- 7. The control wire header the driver puts in front of every message ---------------------
// Kept for the device side's message check; clients never see it.
inline constexpr uint32_t kWireMagic = 0x43494151;  // "QAIC"
struct WireHeader {
  uint32_t crc32;
  uint32_t magic;
  uint32_t sequenceNumber;
  uint32_t len;  // header included
  uint32_t count;
  uint32_t handle;      // user id of the sender (the open file)
  int32_t partitionId;  // -1 = none
  uint32_t padding;
};
static_assert(sizeof(WireHeader) == 32, "wire header is 32 bytes");

// ---- 8. The emulator's extension ioctl ---------------------------------------------------------
inline constexpr std::size_t kDbcWindowNameBytes = 64;
}  // namespace qaic::driver

extern "C" {
struct qaic_emu_dbc_info {
  __u32 dbc_id;           // in
  __u32 generation;       // out
  __u32 nelem;            // out: elements in each FIFO (the activation's queue_size)
  __u32 pad;              // must be zero
  __u64 window_size;      // out: bytes of the window file (registers + FIFOs)
  __u64 request_offset;   // out: byte offset of the request FIFO in the window
  __u64 response_offset;  // out: byte offset of the response FIFO in the window
  char name[64];          // out: window file name inside emu_shm_dir, NUL terminated
};
}
#define DRM_QAIC_EMU_DBC_INFO 0x20
#define DRM_IOCTL_QAIC_EMU_DBC_INFO QAIC_IOWR(DRM_QAIC_EMU_DBC_INFO, struct qaic_emu_dbc_info)
static_assert(sizeof(struct qaic_emu_dbc_info) == 104, "emu_dbc_info");
static_assert(DRM_IOCTL_QAIC_EMU_DBC_INFO == 0xC0686460u, "EMU_DBC_INFO");
