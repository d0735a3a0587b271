// SPDX-License-Identifier: Apache-2.0
#include "driver/ManageMessage.hpp"

#include <cstring>

namespace qaic::driver {

namespace {

template <typename T>
T load(std::span<const std::byte> bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::string where(uint32_t index, uint32_t type) {
  return "manage reply transaction " + std::to_string(index) + " (type " + std::to_string(type) + ")";
}

void requireLength(uint32_t index, uint32_t type, uint32_t len, std::size_t expected) {
  if (len != expected)
    throw ManageMessageError(where(index, type) + ": len " + std::to_string(len) + " != " + std::to_string(expected));
}

}  // namespace

namespace {

// The passthrough answer as a T, when it is one: T's size, magic and version.
template <typename T>
std::optional<T> answerAs(const std::vector<std::byte>& data, uint32_t magic, uint32_t version) {
  T r;
  if (data.size() != sizeof(r)) return std::nullopt;
  std::memcpy(&r, data.data(), sizeof(r));
  if (r.magic != magic || r.version != version) return std::nullopt;
  return r;
}

}  // namespace

std::optional<ResourceGroupResponse> PassthroughReply::resourceGroup() const {
  return answerAs<ResourceGroupResponse>(data, kResourceGroupMagic, kResourceGroupVersion);
}

std::optional<PartitionResponse> PassthroughReply::partition() const {
  return answerAs<PartitionResponse>(data, kPartitionMagic, kPartitionVersion);
}

std::optional<DeviceStatusResponse> PassthroughReply::deviceStatus() const {
  return answerAs<DeviceStatusResponse>(data, kDeviceStatusMagic, kDeviceStatusVersion);
}

std::optional<PeerGroupResponse> PassthroughReply::peerGroup() const {
  return answerAs<PeerGroupResponse>(data, kPeerGroupMagic, kPeerGroupVersion);
}

void ManageMessageBuilder::reserve(std::size_t size, const char* what) const {
  if (size > buffer_.bytes.size() - buffer_.len)
    throw ManageMessageError(std::string("manage message: ") + what + " transaction of " + std::to_string(size) +
                             " bytes does not fit (" + std::to_string(buffer_.len) + " of " +
                             std::to_string(QAIC_MANAGE_MAX_MSG_LENGTH) + " bytes used)");
}

void ManageMessageBuilder::append(const void* transaction, std::size_t size, const char* what) {
  reserve(size, what);
  std::memcpy(buffer_.data() + buffer_.len, transaction, size);
  buffer_.len += static_cast<uint32_t>(size);
  ++buffer_.count;
}

void ManageMessageBuilder::appendHeaderAndPayload(uint32_t type, std::span<const std::byte> payload, const char* what) {
  const std::size_t size = sizeof(qaic_manage_trans_hdr) + payload.size();
  reserve(size, what);
  const qaic_manage_trans_hdr hdr{type, static_cast<uint32_t>(size)};
  std::memcpy(buffer_.data() + buffer_.len, &hdr, sizeof(hdr));
  if (!payload.empty()) std::memcpy(buffer_.data() + buffer_.len + sizeof(hdr), payload.data(), payload.size());
  buffer_.len += static_cast<uint32_t>(size);
  ++buffer_.count;
}

ManageMessageBuilder& ManageMessageBuilder::passthrough(std::span<const std::byte> payload) {
  appendHeaderAndPayload(QAIC_TRANS_PASSTHROUGH_FROM_USR, payload, "passthrough");
  return *this;
}

ManageMessageBuilder& ManageMessageBuilder::resourceGroup(const ResourceGroupRequest& request) {
  return passthrough(std::as_bytes(std::span(&request, 1)));
}

ManageMessageBuilder& ManageMessageBuilder::partition(const PartitionRequest& request) {
  return passthrough(std::as_bytes(std::span(&request, 1)));
}

ManageMessageBuilder& ManageMessageBuilder::peerGroup(const PeerGroupRequest& request) {
  return passthrough(std::as_bytes(std::span(&request, 1)));
}

ManageMessageBuilder& ManageMessageBuilder::deviceStatus() {
  DeviceStatusRequest request{};
  request.magic = kDeviceStatusMagic;
  request.version = kDeviceStatusVersion;
  return passthrough(std::as_bytes(std::span(&request, 1)));
}

ManageMessageBuilder& ManageMessageBuilder::dmaTransfer(uint32_t tag, uint64_t userAddress, uint64_t size) {
  qaic_manage_trans_dma_xfer t{};
  t.hdr = {QAIC_TRANS_DMA_XFER_FROM_USR, sizeof(t)};
  t.tag = tag;
  t.addr = userAddress;
  t.size = size;
  append(&t, sizeof(t), "dma_xfer");
  return *this;
}

ManageMessageBuilder& ManageMessageBuilder::activate(uint32_t queueSize, uint32_t eventfd, uint32_t options,
                                                     uint32_t resourceGroup) {
  qaic_manage_trans_activate_to_dev t{};
  t.hdr = {QAIC_TRANS_ACTIVATE_FROM_USR, sizeof(t)};
  t.queue_size = queueSize;
  t.eventfd = eventfd;
  t.options = options;
  t.pad = resourceGroup;
  append(&t, sizeof(t), "activate");
  return *this;
}

ManageMessageBuilder& ManageMessageBuilder::deactivate(uint32_t dbcId) {
  qaic_manage_trans_deactivate t{};
  t.hdr = {QAIC_TRANS_DEACTIVATE_FROM_USR, sizeof(t)};
  t.dbc_id = dbcId;
  append(&t, sizeof(t), "deactivate");
  return *this;
}

ManageMessageBuilder& ManageMessageBuilder::status() {
  qaic_manage_trans_status_to_dev t{};
  t.hdr = {QAIC_TRANS_STATUS_FROM_USR, sizeof(t)};
  append(&t, sizeof(t), "status");
  return *this;
}

std::vector<ManageReply> parseManageReply(std::span<const std::byte> bytes, uint32_t count) {
  std::vector<ManageReply> replies;
  std::size_t offset = 0;
  for (uint32_t index = 0; index < count; ++index) {
    if (bytes.size() - offset < sizeof(qaic_manage_trans_hdr))
      throw ManageMessageError("manage reply transaction " + std::to_string(index) + ": header at offset " +
                               std::to_string(offset) + " past the reply's " + std::to_string(bytes.size()) + " bytes");
    const auto hdr = load<qaic_manage_trans_hdr>(bytes, offset);
    if (hdr.len < sizeof(hdr) || hdr.len > bytes.size() - offset)
      throw ManageMessageError(where(index, hdr.type) + ": len " + std::to_string(hdr.len) + " outside [8, " +
                               std::to_string(bytes.size() - offset) + "]");
    const auto body = bytes.subspan(offset, hdr.len);
    switch (hdr.type) {
      case QAIC_TRANS_PASSTHROUGH_TO_USR: {
        PassthroughReply r;
        r.data.assign(body.begin() + sizeof(hdr), body.end());
        replies.emplace_back(std::move(r));
        break;
      }
      case QAIC_TRANS_ACTIVATE_FROM_DEV: {
        requireLength(index, hdr.type, hdr.len, sizeof(qaic_manage_trans_activate_from_dev));
        const auto t = load<qaic_manage_trans_activate_from_dev>(body, 0);
        replies.emplace_back(ActivateReply{t.status, t.dbc_id, t.options});
        break;
      }
      case QAIC_TRANS_DEACTIVATE_FROM_DEV: {
        requireLength(index, hdr.type, hdr.len, sizeof(qaic_manage_trans_deactivate));
        const auto t = load<qaic_manage_trans_deactivate>(body, 0);
        replies.emplace_back(DeactivateReply{t.dbc_id});
        break;
      }
      case QAIC_TRANS_STATUS_TO_USR: {
        requireLength(index, hdr.type, hdr.len, sizeof(qaic_manage_trans_status_from_dev));
        const auto t = load<qaic_manage_trans_status_from_dev>(body, 0);
        replies.emplace_back(StatusReply{t.major, t.minor, t.status, t.status_flags});
        break;
      }
      default: throw ManageMessageError(where(index, hdr.type) + ": not a device-to-user transaction type");
    }
    offset += hdr.len;
  }
  if (offset != bytes.size())
    throw ManageMessageError("manage reply: " + std::to_string(bytes.size() - offset) + " bytes after the last of " +
                             std::to_string(count) + " transactions");
  return replies;
}

}  // namespace qaic::driver
