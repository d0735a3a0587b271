#include "DeviceRegistry.hpp"

#include <signal.h>

#include <cstring>
#include <fstream>
#include <set>

#include "Log.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::qaicd {

namespace {

// The figures come from the device's STATUS query over MANAGE, as on a card (on a partition's
// node: the partition's capacity and what is free of it).
Resources totalOf(const driver::DeviceStatusResponse& r) {
  return Resources{r.nspTotal, r.mcidTotal, r.semTotal, r.vcTotal, r.ddrTotalBytes};
}
Resources freeOf(const driver::DeviceStatusResponse& r) {
  return Resources{r.nspFree, r.mcidFree, r.semFree, r.vcFree, r.ddrFreeBytes};
}

uint64_t amountOf(const Resources& r, driver::PartitionResource which) {
  switch (which) {
    case driver::PartitionResource::Nsp: return r.numNsp;
    case driver::PartitionResource::Mcid: return r.numMcid;
    case driver::PartitionResource::Sem: return r.numSem;
    case driver::PartitionResource::Vc: return r.numVc;
    case driver::PartitionResource::Ddr: return r.ddrSize;
    case driver::PartitionResource::None: break;
  }
  return 0;
}

ProtocolError error(int errnum, std::string message) { return ProtocolError{errnum, std::move(message), {}}; }

}  // namespace

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie still answers kill(0); its lease is over all the same.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

void DeviceRegistry::forgetDevice(uint32_t index) {
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (it->second.device == index) {
      logWarn("device " + std::to_string(index) + " went away: dropping partition " + std::to_string(it->first) + " (" +
              it->second.label + ")");
      it = partitions_.erase(it);
    } else {
      ++it;
    }
  }
  devices_.erase(index);
  logWarn("device " + std::to_string(index) + " is gone");
}

void DeviceRegistry::rescan() {
  std::set<uint32_t> present, presentPartitions;
  for (unsigned index : root_.listDevices())
    (index >= driver::kFirstPartitionId ? presentPartitions : present).insert(index);

  for (auto it = devices_.begin(); it != devices_.end();) {
    const uint32_t index = it->first;
    ++it;
    if (present.count(index) == 0) forgetDevice(index);
  }
  for (uint32_t index : present) {
    if (devices_.count(index) != 0) continue;
    auto node = driver::DeviceNode::open(root_, index);
    if (!node) {
      logWarn("device " + std::to_string(index) + ": " + node.message() + " (retrying on the next scan)");
      continue;
    }
    devices_.emplace(index, std::move(*node));
    logInfo("device " + std::to_string(index) + " found");
  }
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (presentPartitions.count(it->first) == 0) {
      logWarn("partition " + std::to_string(it->first) + " vanished from the device (reset or removal)");
      it = partitions_.erase(it);
    } else {
      ++it;
    }
  }
  for (uint32_t id : presentPartitions)
    if (partitions_.count(id) == 0) takeOver(id);
}

std::optional<Partition> DeviceRegistry::readPartition(uint32_t id) const {
  // Who holds a partition is the emulator's record (qaic-emu/partition/); what it holds, the
  // status query on its own node.
  driver::SysfsDevice sysfs(root_, id);
  auto parent = sysfs.readU64(driver::sysfs::kPartitionParent);
  auto holder = sysfs.readU64(driver::sysfs::kPartitionHolderPid);
  if (!parent || !holder) return std::nullopt;
  auto node = driver::DeviceNode::open(root_, id);
  if (!node) return std::nullopt;
  auto report = driver::queryDeviceStatus(*node);
  if (!report) return std::nullopt;
  Partition p;
  p.id = id;
  p.device = static_cast<uint32_t>(*parent);
  p.holderPid = static_cast<pid_t>(*holder);
  if (auto uid = sysfs.readU64(driver::sysfs::kPartitionOwnerUid)) p.ownerUid = static_cast<uint32_t>(*uid);
  if (auto gid = sysfs.readU64(driver::sysfs::kPartitionOwnerGid)) p.ownerGid = static_cast<uint32_t>(*gid);
  if (auto mode = sysfs.read(driver::sysfs::kPartitionMode))
    p.mode = static_cast<uint32_t>(std::strtoul(mode->c_str(), nullptr, 8));
  if (auto label = sysfs.read(driver::sysfs::kPartitionLabel)) p.label = *label;
  p.resources = totalOf(*report);
  return p;
}

void DeviceRegistry::takeOver(uint32_t id) {
  auto p = readPartition(id);
  if (!p) return;  // half-created or going away: the next scan sees it settled
  if (devices_.count(p->device) == 0) return;
  if (!p->isStatic() && !processAlive(p->holderPid)) {
    partitions_.emplace(id, *p);
    remove(id, "its holder " + std::to_string(p->holderPid) + " is gone");
    return;
  }
  logInfo("partition " + std::to_string(id) + " on device " + std::to_string(p->device) + " re-adopted (" +
          (p->isStatic() ? std::string("static") : "holder " + std::to_string(p->holderPid)) + ")");
  partitions_.emplace(id, std::move(*p));
}

std::string DeviceRegistry::refusal(uint32_t device, driver::PartitionResource which, const PartitionSpec& spec) const {
  const std::string where = "device " + std::to_string(device) + ": ";
  auto node = devices_.find(device);
  if (node == devices_.end()) return where + "gone";
  auto report = driver::queryDeviceStatus(node->second);
  const std::string requested = where + driver::partitionResourceName(which) + ": " +
                                std::to_string(amountOf(spec.resources, which)) + " requested";
  if (!report) return requested + " (free count unknown: " + report.message() + ")";
  return requested + ", " + std::to_string(amountOf(freeOf(*report), which)) + " free";
}

std::variant<Partition*, ProtocolError> DeviceRegistry::createOn(uint32_t device, const PartitionSpec& spec,
                                                                 driver::PartitionResource* shortOut) {
  auto node = devices_.find(device);
  if (node == devices_.end()) return error(ENODEV, "device " + std::to_string(device) + ": no such device");
  driver::PartitionRequest request{};
  request.magic = driver::kPartitionMagic;
  request.version = driver::kPartitionVersion;
  request.op = static_cast<uint32_t>(driver::PartitionOp::Create);
  request.resources = spec.resources;
  request.ownerUid = spec.ownerUid;
  request.ownerGid = spec.ownerGid;
  request.mode = spec.mode;
  request.holderPid = spec.holderPid;
  std::strncpy(request.label, spec.label.c_str(), sizeof request.label - 1);
  auto answer = driver::partitionCommand(node->second, request);
  const std::string where = "device " + std::to_string(device) + ": ";
  if (!answer) {
    const int code = answer.error();
    return error(code == 0 ? EIO : code, where + answer.message());
  }
  if (answer->status == -ENOSPC) {
    const auto which = static_cast<driver::PartitionResource>(answer->shortResource);
    if (shortOut != nullptr) {
      *shortOut = which;
      return error(ENOSPC, {});
    }
    return error(ENOSPC, refusal(device, which, spec));
  }
  if (answer->status != 0) return error(-answer->status, where + "partition create: " + std::strerror(-answer->status));
  Partition p;
  p.id = answer->partitionId;
  p.device = device;
  p.resources = answer->resources;
  p.ownerUid = spec.ownerUid;
  p.ownerGid = spec.ownerGid;
  p.mode = spec.mode;
  p.holderPid = spec.holderPid;
  p.label = spec.label;
  auto [it, inserted] = partitions_.insert_or_assign(p.id, std::move(p));
  (void)inserted;
  logInfo("partition " + std::to_string(it->first) + " created on device " + std::to_string(device) + " for uid " +
          std::to_string(spec.ownerUid) + " holder " + std::to_string(spec.holderPid));
  return &it->second;
}

std::variant<Partition*, ProtocolError> DeviceRegistry::create(std::optional<uint32_t> device,
                                                               const PartitionSpec& spec) {
  if (device) return createOn(*device, spec);
  if (devices_.empty()) return error(ENODEV, "no devices under " + root_.path().string());
  // The free counts a refusal quotes are read only when every device refused.
  std::vector<std::pair<uint32_t, driver::PartitionResource>> refused;
  for (const auto& [index, node] : devices_) {
    (void)node;
    driver::PartitionResource which = driver::PartitionResource::None;
    auto result = createOn(index, spec, &which);
    if (std::holds_alternative<Partition*>(result)) return result;
    if (std::get<ProtocolError>(result).errnum != ENOSPC) return result;
    refused.emplace_back(index, which);
  }
  std::string message = "no device has room: ";
  for (std::size_t i = 0; i < refused.size(); ++i)
    message += (i == 0 ? "" : "; ") + refusal(refused[i].first, refused[i].second, spec);
  return error(ENOSPC, message);
}

std::optional<ProtocolError> DeviceRegistry::remove(uint32_t id, const std::string& why) {
  auto it = partitions_.find(id);
  if (it == partitions_.end()) return error(ENOENT, "partition " + std::to_string(id) + ": no such partition");
  const Partition p = it->second;
  partitions_.erase(it);
  auto node = devices_.find(p.device);
  if (node == devices_.end()) return std::nullopt;
  driver::PartitionRequest request{};
  request.magic = driver::kPartitionMagic;
  request.version = driver::kPartitionVersion;
  request.op = static_cast<uint32_t>(driver::PartitionOp::Remove);
  request.partitionId = id;
  auto answer = driver::partitionCommand(node->second, request);
  if (!answer && answer.error() != ENOENT && answer.error() != ENODEV) {
    // Still on the device: the next scan finds it untracked and decides again.
    logWarn("partition " + std::to_string(id) + ": remove failed: " + answer.message());
    return error(answer.error(), "partition " + std::to_string(id) + ": " + answer.message());
  }
  logInfo("partition " + std::to_string(id) + " removed: " + why);
  return std::nullopt;
}

Partition* DeviceRegistry::find(uint32_t id) {
  auto it = partitions_.find(id);
  return it == partitions_.end() ? nullptr : &it->second;
}

std::vector<DeviceInfo> DeviceRegistry::deviceInfos() const {
  std::vector<DeviceInfo> out;
  for (const auto& [index, node] : devices_) {
    DeviceInfo d;
    d.id = index;
    auto report = driver::queryDeviceStatus(node);
    d.status = report ? driver::firmwareStateName(report->firmwareState) : "Gone";
    if (report) {
      d.total = totalOf(*report);
      d.free = freeOf(*report);
    }
    for (const auto& [id, p] : partitions_)
      if (p.device == index) d.partitions.push_back(id);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<uint32_t> DeviceRegistry::deviceIndices() const {
  std::vector<uint32_t> out;
  for (const auto& [index, node] : devices_) out.push_back(index);
  return out;
}

std::optional<Resources> DeviceRegistry::totals(uint32_t index) const {
  auto report = status(index);
  if (!report) return std::nullopt;
  return totalOf(*report);
}

Result<driver::DeviceStatusResponse> DeviceRegistry::status(uint32_t index) const {
  auto it = devices_.find(index);
  if (it == devices_.end()) return SysError{ENODEV, "device " + std::to_string(index) + " is not open"};
  return driver::queryDeviceStatus(it->second);
}

std::optional<std::string> DeviceRegistry::pciAddress(uint32_t index) const {
  auto it = devices_.find(index);
  if (it == devices_.end()) return std::nullopt;
  auto busId = it->second.busId();
  return busId ? std::optional<std::string>(*busId) : std::nullopt;
}

PartitionInfo DeviceRegistry::info(const Partition& p) const {
  PartitionInfo i;
  i.id = p.id;
  i.device = p.device;
  i.node = root_.nodePath(p.id).string();
  i.ownerUid = p.ownerUid;
  i.ownerGid = p.ownerGid;
  i.holderPid = p.holderPid;
  i.isStatic = p.isStatic();
  i.label = p.label;
  i.resources = p.resources;
  return i;
}

}  // namespace qaic::qaicd
