// What qaicd knows about the devices under its root and the partitions on them, and the only
// place that changes them: partitions are created and removed through MANAGE on the parent's
// node (libqaic/driver partitionCommand), everything else is read from sysfs. The event loop
// calls rescan() on every poll tick or udev event.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

struct Partition {
  uint32_t id = 0;
  uint32_t device = 0;
  Resources resources;
  uint32_t ownerUid = 0, ownerGid = 0, mode = 0600;
  pid_t holderPid = 0;  // 0: static
  std::string label;
  uint64_t connection = 0;  // the connection the lease is bound to; 0: none (static, or re-adopted)
  bool isStatic() const { return holderPid == 0; }
};

struct PartitionSpec {
  Resources resources;
  uint32_t ownerUid = 0, ownerGid = 0, mode = 0600;
  pid_t holderPid = 0;
  std::string label;
};

class DeviceRegistry {
 public:
  explicit DeviceRegistry(driver::DeviceRoot root) : root_(std::move(root)) {}

  const driver::DeviceRoot& root() const { return root_; }

  // Follows the tree: opens devices that appeared, forgets devices that went away (with their
  // partitions), forgets partitions whose node vanished (a reset ends them), and takes over
  // partitions it does not track yet, as after a restart: a live holder's lease is kept, a dead
  // holder's partition is removed, holder 0 is a static partition.
  void rescan();

  // `device` absent: the first device with room. ENODEV for an unknown device, ENOSPC naming
  // the short resource ("device 0: numNsp: 12 requested, 4 free").
  std::variant<Partition*, ProtocolError> create(std::optional<uint32_t> device, const PartitionSpec& spec);
  // Removes the partition from its device and from the table; ENOENT when unknown. A partition
  // already gone from the device (reset, removal) is only forgotten.
  std::optional<ProtocolError> remove(uint32_t id, const std::string& why);

  Partition* find(uint32_t id);
  std::map<uint32_t, Partition>& partitions() { return partitions_; }
  std::vector<DeviceInfo> deviceInfos() const;
  PartitionInfo info(const Partition& p) const;
  bool hasDevice(uint32_t index) const { return devices_.count(index) != 0; }
  std::vector<uint32_t> deviceIndices() const;
  // The device's totals as its status query reports them now; nullopt for an unknown device.
  std::optional<Resources> totals(uint32_t index) const;
  // The STATUS query over MANAGE on the device's open node (ENODEV for an unknown device).
  Result<driver::DeviceStatusResponse> status(uint32_t index) const;
  // The device's PCI address (DRM_IOCTL_GET_UNIQUE); nullopt when it cannot be asked.
  std::optional<std::string> pciAddress(uint32_t index) const;

 private:
  // shortOut given: an ENOSPC refusal only names the resource there (no sysfs reads).
  std::variant<Partition*, ProtocolError> createOn(uint32_t device, const PartitionSpec& spec,
                                                   driver::PartitionResource* shortOut = nullptr);
  // "device 0: numNsp: 12 requested, 4 free", with the free count read now.
  std::string refusal(uint32_t device, driver::PartitionResource which, const PartitionSpec& spec) const;
  void takeOver(uint32_t id);
  std::optional<Partition> readPartition(uint32_t id) const;
  void forgetDevice(uint32_t index);

  driver::DeviceRoot root_;
  std::map<uint32_t, driver::DeviceNode> devices_;  // open parent nodes, by index
  std::map<uint32_t, Partition> partitions_;
};

// Whether process `pid` exists (a zombie counts as gone).
bool processAlive(pid_t pid);

}  // namespace qaic::qaicd
