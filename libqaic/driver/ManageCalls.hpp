// SPDX-License-Identifier: Apache-2.0
// The manage calls a runtime or qaicd makes, each one MANAGE ioctl with its reply checked:
// program loads, activation, deactivation, status and resource groups
// (docs/device-protocol.md section 7). A malformed reply is EPROTO with the parser's message.
#pragma once

#include <cstdint>
#include <span>

#include "base/Result.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/ManageMessage.hpp"

namespace qaic::driver {

// Sends a whole program container as DMA_XFER_FROM_USR transactions tagged `loadId` (nonzero,
// at most 24 bits); the device reads the bytes from this process's memory (a mapped file: no copy
// here). No size limit but the device's: one whose memory cannot hold the container refuses it.
Result<void> loadProgram(const DeviceNode& node, std::span<const std::byte> container, uint32_t loadId);
// Releases a load (a transfer of size 0).
Result<void> releaseProgram(const DeviceNode& node, uint32_t loadId);
// Activates program `programIndex` of load `loadId`; returns the DBC the device chose.
// eventfd: a descriptor in this process the device signals on completions, or 0.
// resourceGroup: a group reserved with ResourceGroupOp::ReserveNamed to draw from, or 0.
Result<uint32_t> activate(const DeviceNode& node, uint32_t loadId, uint32_t programIndex, uint32_t queueSize,
                          int eventfd, uint32_t resourceGroup = 0);
// Part `part` of a multi-device program's peer group `token` (DeviceProtocol.hpp, "Peer
// groups"): every part of one program names the same token and part count.
struct PeerGroupPart {
  uint64_t token = 0;
  uint32_t part = 0;
  uint32_t parts = 1;
};
// Activates as activate() does, as that part of the group: the device builds the program's
// collectives over the group's exchange. A part the device refuses comes back as the errno of
// the answer (EXDEV: not linked peer to peer with the group's other devices; EBUSY: the part
// is active already; EINVAL: a part or part count that does not fit the group; ECANCELED: the
// group was broken and still has parts active) with the device's message, which names the devices.
Result<uint32_t> activatePeerPart(const DeviceNode& node, uint32_t loadId, uint32_t programIndex, uint32_t queueSize,
                                  int eventfd, const PeerGroupPart& peer, uint32_t resourceGroup = 0);
Result<void> deactivate(const DeviceNode& node, uint32_t dbcId);
Result<StatusReply> queryStatus(const DeviceNode& node);
// The firmware's report on the device (or, on a partition's node, the partition): state,
// resources total and free, networks, versions. A negative status in the answer is that errno.
Result<DeviceStatusResponse> queryDeviceStatus(const DeviceNode& node);
// A negative status in the answer is returned as that errno (ENOSPC: not enough resources).
Result<ResourceGroupResponse> resourceGroup(const DeviceNode& node, const ResourceGroupRequest& request);

// Creates or removes a partition (a derived device); only a privileged caller may. A negative
// status in the answer is returned as that errno, except -ENOSPC on create, which comes back as
// the answer itself so the caller can name the short resource (PartitionResponse::shortResource).
Result<PartitionResponse> partitionCommand(const DeviceNode& node, const PartitionRequest& request);

// "numNsp", "numMcid", "numSem", "numVc", "ddrSize" or "" for PartitionResource::None.
const char* partitionResourceName(PartitionResource resource);

}  // namespace qaic::driver
