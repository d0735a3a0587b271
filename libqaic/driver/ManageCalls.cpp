// SPDX-License-Identifier: Apache-2.0
#include "driver/ManageCalls.hpp"

#include <cerrno>
#include <optional>
#include <string>

namespace qaic::driver {

namespace {

// Sends the builder's message and parses the answer; exactly `expected` reply transactions.
Result<std::vector<ManageReply>> call(const DeviceNode& node, ManageMessageBuilder& builder, std::size_t expected,
                                      const char* what) {
  ManageBuffer buffer = builder.take();
  if (auto sent = node.manage(buffer); !sent) return SysError{sent.error(), std::string("MANAGE ") + what};
  try {
    auto replies = parseManageReply(buffer);
    if (replies.size() != expected)
      return SysError{EPROTO, std::string("MANAGE ") + what + ": " + std::to_string(replies.size()) +
                                  " reply transactions, expected " + std::to_string(expected)};
    return replies;
  } catch (const ManageMessageError& e) {
    return SysError{EPROTO, std::string("MANAGE ") + what + ": " + e.what()};
  }
}

template <typename T>
Result<T> single(Result<std::vector<ManageReply>> replies, const char* what) {
  if (!replies) return replies.sysError();
  if (const T* reply = std::get_if<T>(&replies->front())) return *reply;
  return SysError{EPROTO, std::string("MANAGE ") + what + ": unexpected reply transaction type"};
}

// Sends the builder's one passthrough request; its answer must decode (with `decode`) as an
// `answerType`, else EPROTO. The answer's own status is the caller's to judge.
template <typename Answer>
Result<Answer> passthroughCall(const DeviceNode& node, ManageMessageBuilder& builder, const char* what,
                               std::optional<Answer> (PassthroughReply::*decode)() const, const char* answerType) {
  auto reply = single<PassthroughReply>(call(node, builder, 1, what), what);
  if (!reply) return reply.sysError();
  std::optional<Answer> answer = (*reply.*decode)();
  if (!answer) return SysError{EPROTO, std::string("MANAGE ") + what + ": answer is not a " + answerType};
  return *answer;
}

}  // namespace

Result<void> loadProgram(const DeviceNode& node, std::span<const std::byte> container, uint32_t loadId) {
  if (loadId == 0 || loadId > kLoadIdMask) return SysError{EINVAL, "load id out of range"};
  if (container.empty()) return SysError{EINVAL, "empty program container"};
  ManageMessageBuilder builder;
  builder.dmaTransfer(loadId, reinterpret_cast<uintptr_t>(container.data()), container.size());
  auto replies = call(node, builder, 0, "program load");
  if (!replies) return replies.sysError();
  return {};
}

Result<void> releaseProgram(const DeviceNode& node, uint32_t loadId) {
  ManageMessageBuilder builder;
  builder.dmaTransfer(loadId, 0, 0);
  auto replies = call(node, builder, 0, "program release");
  if (!replies) return replies.sysError();
  return {};
}

Result<uint32_t> activate(const DeviceNode& node, uint32_t loadId, uint32_t programIndex, uint32_t queueSize,
                          int eventfd, uint32_t resourceGroup) {
  ManageMessageBuilder builder;
  builder.activate(queueSize, static_cast<uint32_t>(eventfd < 0 ? 0 : eventfd),
                   makeActivateOptions(loadId, programIndex), resourceGroup);
  auto reply = single<ActivateReply>(call(node, builder, 1, "activate"), "activate");
  if (!reply) return reply.sysError();
  if (reply->status != 0) return SysError{EIO, "MANAGE activate: status " + std::to_string(reply->status)};
  return reply->dbcId;
}

Result<uint32_t> activatePeerPart(const DeviceNode& node, uint32_t loadId, uint32_t programIndex, uint32_t queueSize,
                                  int eventfd, const PeerGroupPart& peer, uint32_t resourceGroup) {
  PeerGroupRequest request{};
  request.magic = kPeerGroupMagic;
  request.version = kPeerGroupVersion;
  request.token = peer.token;
  request.part = peer.part;
  request.parts = peer.parts;
  ManageMessageBuilder builder;
  builder.peerGroup(request);
  builder.activate(queueSize, static_cast<uint32_t>(eventfd < 0 ? 0 : eventfd),
                   makeActivateOptions(loadId, programIndex), resourceGroup);
  auto replies = call(node, builder, 2, "activate peer part");
  if (!replies) return replies.sysError();
  const auto* membership = std::get_if<PassthroughReply>(&replies->front());
  const auto* activated = std::get_if<ActivateReply>(&replies->back());
  std::optional<PeerGroupResponse> answer = membership ? membership->peerGroup() : std::nullopt;
  if (!answer || !activated) return SysError{EPROTO, "MANAGE activate peer part: unexpected reply transactions"};
  answer->message[sizeof answer->message - 1] = '\0';  // the device's text: never trust its end
  if (answer->status < 0) {
    return SysError{-answer->status, std::string("MANAGE activate peer part ") + std::to_string(peer.part) + " of " +
                                         std::to_string(peer.parts) + ": " + answer->message};
  }
  if (activated->status != 0) {
    return SysError{static_cast<int>(activated->status),
                    "MANAGE activate peer part: status " + std::to_string(activated->status)};
  }
  return activated->dbcId;
}

Result<void> deactivate(const DeviceNode& node, uint32_t dbcId) {
  ManageMessageBuilder builder;
  builder.deactivate(dbcId);
  auto reply = single<DeactivateReply>(call(node, builder, 1, "deactivate"), "deactivate");
  if (!reply) return reply.sysError();
  return {};
}

Result<StatusReply> queryStatus(const DeviceNode& node) {
  ManageMessageBuilder builder;
  builder.status();
  return single<StatusReply>(call(node, builder, 1, "status"), "status");
}

Result<DeviceStatusResponse> queryDeviceStatus(const DeviceNode& node) {
  ManageMessageBuilder builder;
  builder.deviceStatus();
  auto answer = passthroughCall(node, builder, "device status", &PassthroughReply::deviceStatus,
                                "DeviceStatusResponse");
  if (!answer) return answer.sysError();
  if (answer->status < 0) return SysError{-answer->status, "MANAGE device status"};
  // The strings come from the device: never trust their terminators.
  answer->fwVersion[sizeof answer->fwVersion - 1] = '\0';
  answer->hwVersion[sizeof answer->hwVersion - 1] = '\0';
  answer->sku[sizeof answer->sku - 1] = '\0';
  return *answer;
}

Result<ResourceGroupResponse> resourceGroup(const DeviceNode& node, const ResourceGroupRequest& request) {
  ManageMessageBuilder builder;
  builder.resourceGroup(request);
  auto answer = passthroughCall(node, builder, "resource group", &PassthroughReply::resourceGroup,
                                "ResourceGroupResponse");
  if (!answer) return answer.sysError();
  if (answer->status < 0) return SysError{-answer->status, "MANAGE resource group"};
  return *answer;
}

Result<PartitionResponse> partitionCommand(const DeviceNode& node, const PartitionRequest& request) {
  ManageMessageBuilder builder;
  builder.partition(request);
  auto answer = passthroughCall(node, builder, "partition", &PassthroughReply::partition, "PartitionResponse");
  if (!answer) return answer.sysError();
  if (answer->status < 0 && answer->status != -ENOSPC) return SysError{-answer->status, "MANAGE partition"};
  return *answer;
}

const char* partitionResourceName(PartitionResource resource) {
  switch (resource) {
    case PartitionResource::Nsp: return "numNsp";
    case PartitionResource::Mcid: return "numMcid";
    case PartitionResource::Sem: return "numSem";
    case PartitionResource::Vc: return "numVc";
    case PartitionResource::Ddr: return "ddrSize";
    case PartitionResource::None: break;
  }
  return "";
}

}  // namespace qaic::driver
