// SPDX-License-Identifier: Apache-2.0
// The vendor's firmware command protocol (its "NNC" commands, command protocol 17.0), as its open
// userspace (quic/software-kit-for-qualcomm-cloud-ai-100 at f3e37e3: lib/runtime-platform/inc/
// QNncProtocol.h and QAicHostApiInfo.h, lib/network-driver/src/QKmdDevice.cpp) sends it inside
// mainline's MANAGE transport. Layouts restated from those facts, little endian, every structure
// a multiple of 8 bytes; docs/device-protocol.md section 7, "The vendor's protocol".
//
// Framing: one command per PASSTHROUGH_FROM_USR transaction. The payload starts with the command
// type (u32) where this project's own payloads start with an ASCII magic ("QSTA", "QRES",
// "QPRT"): a first word below kCommandTypeLimit is a vendor command. The vendor's userspace sets
// the transaction's length to header + 8 + the request (it lays the request over an 8-byte
// command header), so a payload may be longer than its request. The answer is a
// PASSTHROUGH_TO_USR transaction holding the reply, its length the reply's rounded up to 8.
// The commands carry no version; the status reply tells the protocol version the firmware speaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace qaic::driver::vendor {

inline constexpr uint16_t kCommandProtocolMajor = 17;
inline constexpr uint16_t kCommandProtocolMinor = 0;
inline constexpr uint32_t kCommandTypeLimit = 50;        // the vendor's command types are below it
inline constexpr uint8_t kDeviceInfoFormatVersion = 12;  // the status reply's info format

enum class Command : uint32_t {
  LoadConstants = 1,
  LoadConstantsReply = 2,
  LoadElf = 3,
  LoadElfReply = 4,
  UnloadConstants = 5,
  UnloadConstantsReply = 6,
  UnloadElf = 7,
  UnloadElfReply = 8,
  Activate = 9,
  ActivateReply = 10,
  Deactivate = 11,
  DeactivateReply = 12,
  Status = 13,
  StatusReply = 14,
  LoadConstantsEx = 15,
  LoadConstantsPayload = 16,
  Terminate = 17,
  TerminateReply = 18,
  ReserveVc = 19,
  ReserveVcReply = 20,
  ReleaseVc = 22,
  ReleaseVcReply = 23,
  ReserveActivation = 24,
  ReserveActivationReply = 25,
  ReleaseActivation = 26,
  ReleaseActivationReply = 27,
  CreateResourceGroup = 28,
  CreateResourceGroupReply = 29,
  ReleaseResourceGroup = 30,
  ReleaseResourceGroupReply = 31,
  ResourceInfo = 32,
  ResourceInfoReply = 33,
  PerformanceInfo = 34,
  PerformanceInfoReply = 35,
  ActivationState = 36,
  ActivationStateReply = 37,
  DeviceConfig = 38,
  DeviceConfigReply = 39,
  UpdateActivationReservation = 44,
  UpdateActivationReservationReply = 45,
};

// The firmware's status codes used here (the vendor defines more, down to -118).
enum class FirmwareStatus : int32_t {
  Success = 0,
  Error = -1,
  UndefinedRequest = -3,
  MemoryExhausted = -4,
  MetadataError = -5,
  ParameterError = -6,
  NotInitialized = -8,
  NotPermitted = -9,
  ResourceNotFound = -11,
  NspAllocationFailed = -13,
  CommandLengthError = -17,
  NoNetworkToDeactivate = -116,
};

// The vendor's SKU numbers (the status reply's sku_type; qaic-util -q prints the name).
enum class SkuType : uint8_t {
  Invalid = 0,
  M2 = 1,
  Pcie = 2,
  PciePro = 3,
  PcieLite = 4,
  PcieUltra = 5,
  Auto = 6,
  PcieUltraPlus = 7,
  Pcie080 = 8,
  PcieUltra080 = 9,
};

// ---- Status (13 -> 14) ----
struct StatusRequest {
  uint32_t type;     // Command::Status
  uint8_t infoType;  // 0 from the vendor's userspace; not looked at
  uint8_t padding[3];
};

struct ResourceInfo {
  uint32_t dramTotalMb, dramFreeMb;
  uint32_t fragmentation;  // 100 * (1 - largest free block / free bytes)
  uint8_t vcTotal, vcFree, nspTotal, nspFree;
  uint32_t mcidTotal, mcidFree;
  uint32_t semTotal, semFree;
  uint8_t physicalChannelsTotal, physicalChannelsReserved;
  uint8_t padding[6];
};
static_assert(sizeof(ResourceInfo) == 40 && offsetof(ResourceInfo, mcidTotal) == 16 &&
                  offsetof(ResourceInfo, physicalChannelsTotal) == 32,
              "the vendor's resource info layout");

struct PerformanceInfo {
  uint32_t nspHz, ddrHz, computeNocHz, memoryNocHz, systemNocHz;
  uint32_t padding;
  uint64_t peakOpsPerSecond;
  uint64_t dramBandwidthKBps;  // averaged over the last ~100 ms
  uint64_t reserved[2];
};
static_assert(sizeof(PerformanceInfo) == 56 && offsetof(PerformanceInfo, peakOpsPerSecond) == 24,
              "the vendor's performance info layout");

struct DeviceInfo {
  uint8_t fwMajor, fwMinor, fwPatch, fwBuild;
  char fwQcImageVersion[38];
  char fwOemImageVersion[38];
  char fwImageVariant[16];
  uint32_t hwVersion;  // major << 28 | minor << 16 | patch << 8 | build
  char serial[16];
  char boardSerial[32];
  uint32_t compilerVersion;
  ResourceInfo resources;
  PerformanceInfo performance;
  uint32_t constantsLoaded, constantsInUse;
  uint8_t networksLoaded, networksActive;
  uint16_t metadataMajor, metadataMinor;
  uint16_t protocolMajor, protocolMinor;  // the command protocol: 17.0
  char sblImage[24];
  uint8_t needResetToRetirePages;
  uint8_t padding;
  uint32_t pvsImageVersion;
  uint64_t nspDefectMask;
  uint64_t timeOffsetUs;
  uint32_t retiredPages;
  uint8_t skuType;  // SkuType
  uint8_t complexId;
  uint8_t padding1[2];
};
static_assert(sizeof(DeviceInfo) == 320 && offsetof(DeviceInfo, hwVersion) == 96 &&
                  offsetof(DeviceInfo, resources) == 152 && offsetof(DeviceInfo, performance) == 192 &&
                  offsetof(DeviceInfo, constantsLoaded) == 248 && offsetof(DeviceInfo, protocolMajor) == 262 &&
                  offsetof(DeviceInfo, sblImage) == 266 && offsetof(DeviceInfo, nspDefectMask) == 296 &&
                  offsetof(DeviceInfo, skuType) == 316,
              "the vendor's device info layout (its info format 12)");

struct NspInfo {
  uint8_t major, minor, patch, build;
  uint32_t padding;
  char qcImageVersion[64];
  char oemImageVersion[48];
  char imageVariant[48];
};
static_assert(sizeof(NspInfo) == 168, "the vendor's NSP info layout");

struct StatusReply {
  uint32_t type;  // Command::StatusReply
  int32_t status;
  uint8_t formatVersion;  // kDeviceInfoFormatVersion
  uint8_t formatPadding[7];
  DeviceInfo device;
  NspInfo nsp;
};
static_assert(sizeof(StatusReply) == 504 && offsetof(StatusReply, device) == 16 && offsetof(StatusReply, nsp) == 336,
              "the vendor's status reply layout");

// ---- Load and unload of a network image (3 -> 4, 7 -> 8) ----
// A LoadElf transaction is followed by a DMA_XFER_FROM_USR with the same tag carrying the image.
struct LoadElfRequest {
  uint32_t type;  // Command::LoadElf
  uint32_t tag;   // the DMA_XFER_FROM_USR transaction with the image has the same tag
  uint32_t processId;
  uint32_t metadataCrc;
  char name[64];
  uint64_t length;  // the image's size: the DMA transfer's
  uint32_t metadataFlatbufferCrc;
  uint8_t padding[4];
};
static_assert(sizeof(LoadElfRequest) == 96 && offsetof(LoadElfRequest, length) == 80, "the vendor's load request");

struct LoadReply {  // LoadElfReply, and LoadConstantsReply for the constants commands
  uint32_t type;
  uint32_t id;  // the new image (or constants) id; 0 on failure
  int32_t status;
  uint32_t padding;
};
static_assert(sizeof(LoadReply) == 16, "the vendor's load reply");

struct UnloadRequest {  // UnloadElf, UnloadConstants
  uint32_t type;
  uint32_t id;
};

// The reply of every command that answers only a status: unload, deactivate, release, ...
struct StatusOnlyReply {
  uint32_t type;
  int32_t status;
};

// ---- Activate (9 -> 10) ----
// Followed by an ACTIVATE_FROM_USR transaction (queue size, eventfd) when `vcSetup` is 1.
struct ActivateRequest {
  uint32_t type;  // Command::Activate
  uint32_t processId;
  uint32_t constantsId;  // 0: none
  uint32_t elfId;
  uint32_t reservationType;       // 0: none
  int32_t resourceReservationId;  // -1: none
  uint32_t vcSetup;               // 1: an ACTIVATE_FROM_USR transaction follows
  int32_t vcReservationId;        // -1: none
  int32_t initialState;           // 0 standby, 1 ready, 2 deactivated
  uint32_t dmaType;
  uint8_t datapathSwitching;
  uint8_t padding[7];
};
static_assert(sizeof(ActivateRequest) == 48, "the vendor's activate request");

struct ActivateReply {
  uint32_t type;  // Command::ActivateReply
  int32_t status;
  uint32_t activationId;  // 0 on failure
  uint32_t virtualChannelId;
  uint64_t ddrBase, dynamicDdrBase, mcidBase, mcidBaseDmaCommands;
  uint32_t dmaType, physicalChannelMask;
  uint64_t nspPollingAddress;
  uint32_t nspPollingInfoSize, nspPollingData;
  uint64_t doorbellAddress;
  uint8_t doorbellLength, doorbellValid;
  uint8_t nspMask[4];  // u32 at byte 82, unaligned in the vendor's packed layout
  uint8_t padding[2];
};
static_assert(sizeof(ActivateReply) == 88 && offsetof(ActivateReply, ddrBase) == 16 &&
                  offsetof(ActivateReply, doorbellLength) == 80,
              "the vendor's activate reply");

// ---- Deactivate (11 -> 12) ----
// Followed by a DEACTIVATE_FROM_USR transaction (the DBC) when `vcTeardown` is 1.
struct DeactivateRequest {
  uint32_t type;  // Command::Deactivate
  uint32_t activationId;
  uint32_t vcTeardown;
  uint32_t padding;
};

// ---- Resource and performance queries (32 -> 33, 34 -> 35) ----
struct ResourceInfoRequest {
  uint32_t type;
  uint32_t processId;
  int32_t resourceGroupId;  // -1: the device's resources
  uint32_t padding;
};
struct ResourceInfoReply {
  uint32_t type;
  int32_t resourceGroupId;
  ResourceInfo resources;
  int32_t status;
  uint32_t padding;
};
static_assert(sizeof(ResourceInfoReply) == 56 && offsetof(ResourceInfoReply, status) == 48,
              "the vendor's resource info reply");
struct PerformanceInfoRequest {
  uint32_t type;
  uint32_t padding;
};
struct PerformanceInfoReply {
  uint32_t type;
  int32_t status;
  PerformanceInfo performance;
};
static_assert(sizeof(PerformanceInfoReply) == 64, "the vendor's performance info reply");

// Where each request's reply puts its status, for the commands the firmware refuses: the reply
// type, its size and the status's offset. nullopt for a first word that names no request: that
// one is answered with the 8-byte StatusOnlyReply, type 0 and UndefinedRequest.
struct ReplyShape {
  uint32_t type;
  uint32_t size;
  uint32_t statusOffset;
};
constexpr std::optional<ReplyShape> replyShape(uint32_t requestType) {
  switch (static_cast<Command>(requestType)) {
    case Command::LoadConstants:
    case Command::LoadConstantsEx:
    case Command::LoadConstantsPayload: return ReplyShape{2, 16, 8};
    case Command::LoadElf: return ReplyShape{4, 16, 8};
    case Command::UnloadConstants: return ReplyShape{6, 8, 4};
    case Command::UnloadElf: return ReplyShape{8, 8, 4};
    case Command::Activate: return ReplyShape{10, sizeof(ActivateReply), 4};
    case Command::Deactivate: return ReplyShape{12, 8, 4};
    case Command::Status: return ReplyShape{14, sizeof(StatusReply), 4};
    case Command::Terminate: return ReplyShape{18, 8, 4};
    case Command::ReserveVc: return ReplyShape{20, 40, 4};
    case Command::ReleaseVc: return ReplyShape{23, 8, 4};
    case Command::ReserveActivation: return ReplyShape{25, 16, 4};
    case Command::ReleaseActivation: return ReplyShape{27, 8, 4};
    case Command::CreateResourceGroup: return ReplyShape{29, 16, 4};
    case Command::ReleaseResourceGroup: return ReplyShape{31, 8, 4};
    case Command::ResourceInfo: return ReplyShape{33, sizeof(ResourceInfoReply), 48};
    case Command::PerformanceInfo: return ReplyShape{35, sizeof(PerformanceInfoReply), 4};
    case Command::ActivationState: return ReplyShape{37, 8, 4};
    case Command::DeviceConfig: return ReplyShape{39, 8, 4};
    case Command::UpdateActivationReservation: return ReplyShape{45, 8, 4};
    default: return std::nullopt;
  }
}

}  // namespace qaic::driver::vendor
