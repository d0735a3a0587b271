// SPDX-License-Identifier: Apache-2.0
// Manage messages of the uAPI (DRM_IOCTL_QAIC_MANAGE): a builder for the transactions a user
// sends and a bounds-checked parser for the transactions the device writes back into the same
// buffer. The buffer is always QAIC_MANAGE_MAX_MSG_LENGTH bytes, because the reply may be longer
// than the request.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "driver/DeviceProtocol.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::driver {

// A transaction that does not fit, or a reply that is malformed: the message names the
// transaction index and the field.
class ManageMessageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The in/out buffer of one MANAGE call: `len` bytes of `count` transactions at data().
struct ManageBuffer {
  alignas(8) std::array<std::byte, QAIC_MANAGE_MAX_MSG_LENGTH> bytes{};
  uint32_t len = 0;
  uint32_t count = 0;

  std::byte* data() { return bytes.data(); }
  const std::byte* data() const { return bytes.data(); }
  std::span<const std::byte> used() const { return {bytes.data(), len}; }
};

class ManageMessageBuilder {
 public:
  // Each add throws ManageMessageError naming the transaction when the message would exceed
  // QAIC_MANAGE_MAX_MSG_LENGTH.
  ManageMessageBuilder& passthrough(std::span<const std::byte> payload);
  // A resource-group reserve/release/query (docs/device-protocol.md section 6) as passthrough.
  ManageMessageBuilder& resourceGroup(const ResourceGroupRequest& request);
  // A partition create/remove (DeviceProtocol.hpp, "Partitions") as passthrough.
  ManageMessageBuilder& partition(const PartitionRequest& request);
  // The device status query (DeviceProtocol.hpp, "QSTA") as passthrough.
  ManageMessageBuilder& deviceStatus();
  // A peer-group membership (DeviceProtocol.hpp, "QPGR") as passthrough: the activate added
  // right after it activates that part of the group.
  ManageMessageBuilder& peerGroup(const PeerGroupRequest& request);
  // Program loads: `tag` is the load id (DeviceProtocol.hpp section 6); size 0 releases it.
  ManageMessageBuilder& dmaTransfer(uint32_t tag, uint64_t userAddress, uint64_t size);
  // eventfd: a descriptor number in this process that the device signals on completions
  // (0 = none), see docs/device-protocol.md section 3.
  // options: makeActivateOptions(loadId, programIndex).
  // resourceGroup: the group the activation draws from (section 6), 0 for the file's default.
  ManageMessageBuilder& activate(uint32_t queueSize, uint32_t eventfd, uint32_t options = 0,
                                 uint32_t resourceGroup = 0);
  ManageMessageBuilder& deactivate(uint32_t dbcId);
  ManageMessageBuilder& status();

  const ManageBuffer& buffer() const { return buffer_; }
  ManageBuffer take() { return buffer_; }

 private:
  void reserve(std::size_t size, const char* what) const;
  void append(const void* transaction, std::size_t size, const char* what);
  void appendHeaderAndPayload(uint32_t type, std::span<const std::byte> payload, const char* what);
  ManageBuffer buffer_;
};

// Reply transactions.
struct PassthroughReply {
  std::vector<std::byte> data;
  // The answer to a resource-group request, when data is one (right size, magic and version).
  std::optional<ResourceGroupResponse> resourceGroup() const;
  // The answer to a partition command, likewise.
  std::optional<PartitionResponse> partition() const;
  // The answer to the device status query, likewise.
  std::optional<DeviceStatusResponse> deviceStatus() const;
  // The answer to a peer-group membership, likewise.
  std::optional<PeerGroupResponse> peerGroup() const;
};
struct ActivateReply {
  uint32_t status = 0;
  uint32_t dbcId = 0;
  uint64_t options = 0;
};
struct DeactivateReply {
  uint32_t dbcId = 0;
};
struct StatusReply {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint32_t status = 0;
  uint64_t flags = 0;
};
using ManageReply = std::variant<PassthroughReply, ActivateReply, DeactivateReply, StatusReply>;

// Parses `count` transactions in `bytes` (types PASSTHROUGH_TO_USR, ACTIVATE_FROM_DEV,
// DEACTIVATE_FROM_DEV, STATUS_TO_USR): every header's len must cover the header, stay inside
// the buffer and match its type's size; any other type is refused. Throws
// ManageMessageError ("transaction 2 (type 8): len 16 != 24").
std::vector<ManageReply> parseManageReply(std::span<const std::byte> bytes, uint32_t count);
inline std::vector<ManageReply> parseManageReply(const ManageBuffer& buffer) {
  return parseManageReply(buffer.used(), buffer.count);
}

}  // namespace qaic::driver
