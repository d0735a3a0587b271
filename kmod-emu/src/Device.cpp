#include "Device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <set>
#include <sstream>

#include "Log.hpp"

namespace qaic::emu {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

rt::Resources totalsOf(const DeviceConfig& c) {
  return rt::Resources{c.nsps, c.mcids, c.semaphores, c.dbcs, c.ddrMb * kMiB};
}

const char* statusName(Device::Status s) {
  switch (s) {
    case Device::Status::Initializing: return "Initializing";
    case Device::Status::Ready: return "Ready";
    case Device::Status::Error: return "Error";
  }
  return "Error";
}

const std::vector<std::string> kFaultFiles = {"device/fault/nsp_hang", "device/fault/dma_fail",
                                              "device/fault/error", "device/fault/reset",
                                              "device/fault/remove"};

// Parses "<unsigned>" fields of a fault write; trailing newline allowed.
std::vector<uint64_t> parseNumbers(const std::string& text, bool& ok) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  std::string word;
  ok = true;
  while (in >> word) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || p != word.data() + word.size()) ok = false;
    out.push_back(v);
  }
  return out;
}

}  // namespace

Device::Device(uint32_t index, DeviceConfig config, DeviceContext context)
    : index_(index),
      config_(completeIdentity(std::move(config), index)),
      ctx_(std::move(context)),
      total_(totalsOf(config_)),
      free_(total_),
      dbcs_(config_.dbcs),
      dbcGeneration_(config_.dbcs, 0),
      nspHang_(config_.faults.nspHang),
      dmaFailCode_(config_.faults.dmaFailCode),
      dmaFailCount_(config_.faults.dmaFailCount) {}

Device::~Device() { shutdown(); }

std::shared_ptr<OpenFile> Device::open(uid_t uid, gid_t gid, int& error, uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  if (removed_.load() || stopped_) {
    error = ENODEV;
    return nullptr;
  }
  std::shared_ptr<Partition> partition;
  if (partitionId != 0) {
    auto it = partitions_.find(partitionId);
    if (it == partitions_.end() || it->second->ended) {
      error = ENODEV;
      return nullptr;
    }
    partition = it->second;
    // The node's mode bits already stopped others at the kernel's permission check; this is the
    // device's own word on it, so the lease holds even for a caller that got past the mode.
    const bool owner = uid == partition->ownerUid;
    const bool group = (partition->mode & 0060) == 0060 && gid == partition->ownerGid;
    if (uid != 0 && !owner && !group) {
      error = EACCES;
      return nullptr;
    }
  }
  auto f = std::make_shared<OpenFile>();
  f->id = nextFileId_++;
  f->uid = uid;
  f->gid = gid;
  f->partition = std::move(partition);
  files_[f->id] = f;
  error = 0;
  return f;
}

void Device::release(const std::shared_ptr<OpenFile>& file) {
  std::vector<std::shared_ptr<Activation>> stopping;
  {
    std::lock_guard lock(mutex_);
    std::vector<uint32_t> ids;
    for (auto& [dbc, act] : file->activations) ids.push_back(dbc);
    for (uint32_t dbc : ids)
      if (auto act = detachActivation(*file, dbc)) stopping.push_back(std::move(act));
    for (auto& [id, group] : file->groups) *file->pool(free_) += group.capacity;
    file->groups.clear();
    file->loads.clear();
    files_.erase(file->id);
  }
  for (auto& act : stopping)
    stopChannel(*act, driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped);
  {
    // BOs go last: a stopped channel no longer reaches them.
    std::lock_guard lock(mutex_);
    file->bos.clear();
  }
  boChanged_.notify_all();
  logInfo("accel" + std::to_string(index_) + ": file " + std::to_string(file->id) + " released");
}

std::shared_ptr<Activation> Device::detachActivation(OpenFile& f, uint32_t dbcId) {
  auto it = f.activations.find(dbcId);
  if (it == f.activations.end()) return nullptr;
  auto act = it->second;
  f.activations.erase(it);
  dbcs_[dbcId].reset();
  if (act->groupId != 0) {
    auto g = f.groups.find(act->groupId);
    if (g != f.groups.end()) g->second.free += act->charged;
  } else {
    *f.pool(free_) += act->charged;
  }
  return act;
}

void Device::abortActivations(uint16_t code, driver::DeviceStatus status,
                              const Partition* partition) {
  std::vector<std::shared_ptr<Activation>> stopping;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, weak] : files_) {
      auto f = weak.lock();
      if (!f || (partition != nullptr && f->partition.get() != partition)) continue;
      std::vector<uint32_t> ids;
      for (auto& [dbc, act] : f->activations) ids.push_back(dbc);
      for (uint32_t dbc : ids)
        if (auto act = detachActivation(*f, dbc)) stopping.push_back(std::move(act));
    }
  }
  faultChanged_.notify_all();
  for (auto& act : stopping) stopChannel(*act, code, status);
  boChanged_.notify_all();
}

void Device::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  abortActivations(driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped);
}

void Device::reset() {
  {
    std::lock_guard lock(mutex_);
    status_ = Status::Initializing;
  }
  logInfo("accel" + std::to_string(index_) + ": reset");
  abortActivations(driver::DBC_COMPLETION_DEVICE_RESET, driver::DeviceStatus::Resetting);
  std::lock_guard lock(mutex_);
  endPartitionsLocked();  // a reset loses the firmware's reservations, as on the card
  nspHang_ = false;
  dmaFailCount_ = 0;
  status_ = Status::Ready;
}

void Device::enterError() {
  {
    std::lock_guard lock(mutex_);
    if (status_ == Status::Error) return;
    status_ = Status::Error;
  }
  logInfo("accel" + std::to_string(index_) + ": fatal error reported");
  // The firmware is gone: what ran on it ends, and nothing starts until a reset (or clearing the
  // fault) makes the card Ready again. Its partitions stay, as reservations do on the card.
  abortActivations(driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped);
}

void Device::remove() {
  removed_.store(true);
  logInfo("accel" + std::to_string(index_) + ": removed");
  abortActivations(driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Removed);
  std::lock_guard lock(mutex_);
  endPartitionsLocked();
}

void Device::stopRemovedPartitions() {
  std::vector<std::shared_ptr<Partition>> removed;
  {
    std::lock_guard lock(mutex_);
    removed.swap(removedPartitions_);
  }
  for (const auto& p : removed) {
    abortActivations(driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped, p.get());
    logInfo("accel" + std::to_string(index_) + ": partition " + std::to_string(p->id) + " removed");
  }
}

void Device::endPartitionsLocked() {
  for (auto& [id, p] : partitions_) {
    p->ended = true;
    free_ += p->capacity;
    if (ctx_.partitionNodes) ctx_.partitionNodes->withdrawPartition(id);
    logInfo("accel" + std::to_string(index_) + ": partition " + std::to_string(id) + " ended");
  }
  partitions_.clear();
}

int Device::ioctl(OpenFile& file, unsigned cmd, const IoctlCall& call) {
  if (removed_.load()) return ENODEV;
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || (file.partition && file.partition->ended)) return ENODEV;
  }
  // FUSE sizes the argument from the command number; a mismatch means a foreign command.
  const std::size_t size = _IOC_SIZE(cmd);
  const bool writes = _IOC_DIR(cmd) & _IOC_WRITE, reads = _IOC_DIR(cmd) & _IOC_READ;
  if ((writes && call.inSize < size) || (reads && call.outSize < size)) return EINVAL;
  switch (cmd) {
    case DRM_IOCTL_QAIC_MANAGE: {
      const int err = manage(file, call);
      stopRemovedPartitions();
      return err;
    }
    case DRM_IOCTL_QAIC_CREATE_BO: return createBo(file, call);
    case DRM_IOCTL_QAIC_MMAP_BO: return mmapBo(file, call);
    case DRM_IOCTL_QAIC_ATTACH_SLICE_BO: return attachSlice(file, call);
    case DRM_IOCTL_QAIC_EXECUTE_BO: return execute(file, call, false);
    case DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO: return execute(file, call, true);
    case DRM_IOCTL_QAIC_WAIT_BO: return waitBo(file, call);
    case DRM_IOCTL_QAIC_PERF_STATS_BO: return perfStats(file, call);
    case DRM_IOCTL_QAIC_DETACH_SLICE_BO: return detachSlice(file, call);
    case DRM_IOCTL_QAIC_EMU_DBC_INFO: return dbcInfo(file, call);
    default: return ENOTTY;
  }
}

// ---- ChannelHost -------------------------------------------------------------------------------

std::shared_ptr<BufferObject> Device::translate(const Activation& act, uint32_t handle,
                                                uint64_t offset, uint64_t length, uint32_t dir) {
  std::lock_guard lock(mutex_);
  auto it = act.owner->bos.find(handle);
  if (it == act.owner->bos.end()) return nullptr;
  const auto& bo = it->second;
  if (!bo->sliced || bo->dbcId != act.dbcId || bo->dir != dir) return nullptr;
  for (const auto& s : bo->slices) {
    if (offset >= s.offset && length <= s.size && offset - s.offset <= s.size - length) return bo;
  }
  return nullptr;
}

bool Device::completeKernelSlot(Activation& act, uint32_t slot, uint16_t code) {
  {
    std::lock_guard lock(mutex_);
    auto it = act.kernelSlots.find(slot);
    if (it == act.kernelSlots.end()) return false;
    BufferObject& bo = *it->second;
    bo.state = BufferObject::State::Done;
    bo.completionCode = code;
    bo.completed = Clock::now();
    act.kernelSlots.erase(it);
  }
  boChanged_.notify_all();
  return true;
}

uint16_t Device::takeInjectedFault() {
  std::lock_guard lock(mutex_);
  if (dmaFailCount_ == 0) return 0;
  --dmaFailCount_;
  return dmaFailCode_;
}

bool Device::waitWhileHung(const Activation& act, std::chrono::milliseconds limit) {
  if (!nspHang_.load()) return !act.stopping.load();  // every run passes here: no mutex
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_lock lock(mutex_);
  // A stopping activation does not notify faultChanged_: poll for it.
  constexpr std::chrono::milliseconds kStopPoll{100};
  while (nspHang_.load() && !act.stopping.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    faultChanged_.wait_until(lock, std::min(deadline, now + kStopPoll));
  }
  return !nspHang_.load() && !act.stopping.load();
}

// ---- sysfs -------------------------------------------------------------------------------------

// Identity and telemetry as a card exposes them: the firmware's strings as class attributes, the
// PCI function's link attributes (the kernel's own names and formats) and an hwmon directory
// (millidegrees, microwatts) under device/.
const std::vector<std::string> Device::kIdentityAttributes = {
    "serial",
    "board_serial",
    "fw_qc_image_version",
    "fw_oem_image_version",
    "fw_image_variant",
    "nsp_version",
    "nsp_qc_image_version",
    "nsp_image_variant",
    "device_capabilities",
    "ddr_frequency_mhz",
    "device/max_link_speed",
    "device/max_link_width",
    "device/current_link_speed",
    "device/current_link_width",
    "device/hwmon/hwmon0/name",
    "device/hwmon/hwmon0/temp1_input",
    "device/hwmon/hwmon0/power1_input",
    "device/hwmon/hwmon0/power1_cap",
};

// Caller holds mutex_.
std::optional<std::string> Device::readIdentityAttribute(const std::string& name) const {
  const DeviceConfig& c = config_;
  auto line = [](const std::string& text) { return text + "\n"; };
  if (name == "serial") return line(c.serial);
  if (name == "board_serial") return line(c.boardSerial);
  if (name == "fw_qc_image_version") return line(c.fwQcImageVersion);
  if (name == "fw_oem_image_version") return line(c.fwOemImageVersion);
  if (name == "fw_image_variant") return line(c.fwImageVariant);
  if (name == "nsp_version") return line(c.fwVersion);
  if (name == "nsp_qc_image_version") return line(c.nspQcImageVersion);
  if (name == "nsp_image_variant") return line(c.nspImageVariant);
  if (name == "device_capabilities") {
    std::string text;
    for (const auto& [capability, supported] : c.capabilities)
      text += (text.empty() ? "" : " ") + capability + (supported ? "+" : "-");
    return line(text);
  }
  if (name == "ddr_frequency_mhz") return line(std::to_string(c.ddrFrequencyMhz));
  if (name == "device/max_link_speed") return line(c.maxLinkSpeed);
  if (name == "device/max_link_width") return line(std::to_string(c.maxLinkWidth));
  if (name == "device/current_link_speed") return line(c.currentLinkSpeed);
  if (name == "device/current_link_width") return line(std::to_string(c.currentLinkWidth));
  if (name == "device/hwmon/hwmon0/name") return line("qaic");
  // The NSPs working (claimed by activations or partitions) draw power, up to the cap.
  const double busyNsps = static_cast<double>(total_.numNsp - free_.numNsp);
  const double powerW = std::min(c.tdpCapW, c.idlePowerW + c.powerPerNspW * busyNsps);
  if (name == "device/hwmon/hwmon0/power1_input") return line(std::to_string(std::llround(powerW * 1e6)));
  if (name == "device/hwmon/hwmon0/power1_cap") return line(std::to_string(std::llround(c.tdpCapW * 1e6)));
  if (name == "device/hwmon/hwmon0/temp1_input")
    return line(std::to_string(std::llround((c.idleTemperatureC + c.degreesPerW * (powerW - c.idlePowerW)) * 1000)));
  return std::nullopt;
}

std::vector<std::string> Device::attributeNames(uint32_t dbcs) {
  std::vector<std::string> names = {
      "status",          "nsp_total",        "nsp_free",          "vc_total",
      "vc_free",         "mcid_total",       "mcid_free",         "sem_total",
      "sem_free",        "dram_total",       "dram_free",         "networks_loaded",
      "networks_active", "constants_loaded", "constants_in_use",  "pci_address",
      "fw_version",      "hw_version",       "sku",               "nsp_frequency_mhz",
      "device/vendor",   "device/device",    "device/emu_shm_dir", "device/emu_pid",
      "device/numa_node"};
  names.insert(names.end(), kIdentityAttributes.begin(), kIdentityAttributes.end());
  for (uint32_t i = 0; i < dbcs; ++i) names.push_back("dbc" + std::to_string(i) + "_state");
  names.insert(names.end(), kFaultFiles.begin(), kFaultFiles.end());
  return names;
}

std::vector<std::string> Device::writableAttributeNames() { return kFaultFiles; }

std::vector<std::string> Device::partitionAttributeNames() {
  std::vector<std::string> names;
  for (const std::string& n : attributeNames(0))
    if (!attributeWritable(n)) names.push_back(n);
  for (const char* n : {"parent", "owner_uid", "owner_gid", "mode", "holder_pid", "label"})
    names.push_back(std::string("device/partition/") + n);
  return names;
}

std::optional<Device::NodeOwner> Device::partitionOwner(uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  auto it = partitions_.find(partitionId);
  if (it == partitions_.end() || it->second->ended) return std::nullopt;
  return NodeOwner{it->second->ownerUid, it->second->ownerGid, it->second->mode};
}

bool Device::attributeWritable(const std::string& name) {
  for (const auto& f : kFaultFiles)
    if (f == name) return true;
  return false;
}

std::optional<std::string> Device::readAttribute(const std::string& name, uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  if (partitionId != 0) {
    auto it = partitions_.find(partitionId);
    if (it == partitions_.end()) return std::nullopt;
    if (auto own = readPartitionAttribute(*it->second, name)) return own;
    // A partition shows its parent card's identity and telemetry, not its DBCs or fault files.
    if (name.rfind("dbc", 0) == 0 || name.starts_with("device/")) {
      const bool identity = std::find(kIdentityAttributes.begin(), kIdentityAttributes.end(), name) !=
                            kIdentityAttributes.end();
      if (name != "device/vendor" && name != "device/device" && name != "device/emu_shm_dir" &&
          name != "device/emu_pid" && name != "device/numa_node" && !identity)
        return std::nullopt;
    }
  }
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == "status") return std::string(statusName(status_)) + "\n";
  if (name == "nsp_total") return n(total_.numNsp);
  if (name == "nsp_free") return n(free_.numNsp);
  if (name == "vc_total") return n(total_.numVc);
  if (name == "vc_free") return n(free_.numVc);
  if (name == "mcid_total") return n(total_.numMcid);
  if (name == "mcid_free") return n(free_.numMcid);
  if (name == "sem_total") return n(total_.numSem);
  if (name == "sem_free") return n(free_.numSem);
  if (name == "dram_total") return n(total_.ddrSize / kMiB);
  if (name == "dram_free") return n(free_.ddrSize / kMiB);
  if (name == "networks_loaded" || name == "constants_loaded") {
    // A load counts as network; its constants count once it has been validated by activation.
    uint64_t loads = 0, constants = 0;
    for (auto& [id, weak] : files_) {
      auto f = weak.lock();
      if (!f) continue;
      loads += f->loads.size();
      std::set<const void*> withConstants;
      for (auto& [dbc, act] : f->activations)
        if (act->program && act->program->needs().constantsBytes > 0)
          withConstants.insert(act->load.get());
      constants += withConstants.size();
    }
    return n(name == "networks_loaded" ? loads : constants);
  }
  if (name == "networks_active" || name == "constants_in_use") {
    uint64_t active = 0, constants = 0;
    for (const auto& act : dbcs_) {
      if (!act) continue;
      ++active;
      if (act->program && act->program->needs().constantsBytes > 0) ++constants;
    }
    return n(name == "networks_active" ? active : constants);
  }
  if (name == "pci_address") {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0000:%02x:00.0\n", index_ + 1);
    return std::string(buf);
  }
  if (name == "fw_version") return config_.fwVersion + "\n";
  if (name == "hw_version") return config_.hwVersion + "\n";
  if (name == "sku") return config_.sku + "\n";
  if (name == "nsp_frequency_mhz") return n(config_.nspFrequencyMhz);
  if (auto identity = readIdentityAttribute(name)) return identity;
  if (name == "device/vendor") return std::string("0x17cb\n");
  if (name == "device/device") return std::string("0xa100\n");
  if (name == "device/emu_shm_dir") return ctx_.shm->path() + "\n";
  if (name == "device/emu_pid") return n(static_cast<uint64_t>(getpid()));
  if (name == "device/numa_node") return config_.numaNode ? n(*config_.numaNode) : std::string("-1\n");
  if (name == "device/fault/nsp_hang") return std::string(nspHang_ ? "1\n" : "0\n");
  if (name == "device/fault/dma_fail")
    return std::to_string(dmaFailCode_) + " " + std::to_string(dmaFailCount_) + "\n";
  if (name == "device/fault/error") return std::string(status_ == Status::Error ? "1\n" : "0\n");
  if (name == "device/fault/reset" || name == "device/fault/remove") return std::string("0\n");
  if (name.size() > 9 && name.rfind("dbc", 0) == 0 && name.ends_with("_state")) {
    const std::string digits = name.substr(3, name.size() - 9);
    uint32_t i = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (ec == std::errc() && p == digits.data() + digits.size() && i < dbcs_.size())
      return std::string(dbcs_[i] ? "assigned\n" : "idle\n");
  }
  return std::nullopt;
}

int Device::writeAttribute(const std::string& name, const std::string& text) {
  bool ok = false;
  auto values = parseNumbers(text, ok);
  if (!ok || values.empty()) return EINVAL;
  if (name == "device/fault/nsp_hang") {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    {
      std::lock_guard lock(mutex_);
      nspHang_ = values[0] == 1;
    }
    faultChanged_.notify_all();
    return 0;
  }
  if (name == "device/fault/dma_fail") {
    // "<code> [count]": the next count (default 1) requests complete with code; "0" clears.
    if (values.size() > 2 || values[0] > driver::DBC_COMPLETION_ABORTED) return EINVAL;
    std::lock_guard lock(mutex_);
    dmaFailCode_ = static_cast<uint16_t>(values[0]);
    dmaFailCount_ = values[0] == 0 ? 0 : static_cast<uint32_t>(values.size() == 2 ? values[1] : 1);
    return 0;
  }
  if (name == "device/fault/error") {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    if (values[0] == 1) {
      enterError();
    } else {
      std::lock_guard lock(mutex_);
      if (status_ == Status::Error) status_ = Status::Ready;
    }
    return 0;
  }
  if (name == "device/fault/reset" || name == "device/fault/remove") {
    if (values.size() != 1 || values[0] != 1) return EINVAL;
    if (name.ends_with("reset"))
      reset();
    else
      remove();
    return 0;
  }
  return EACCES;
}

// A partition shows its own capacity and what is left of it; the rest is its parent's.
std::optional<std::string> Device::readPartitionAttribute(const Partition& p,
                                                          const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == "nsp_total") return n(p.capacity.numNsp);
  if (name == "nsp_free") return n(p.free.numNsp);
  if (name == "vc_total") return n(p.capacity.numVc);
  if (name == "vc_free") return n(p.free.numVc);
  if (name == "mcid_total") return n(p.capacity.numMcid);
  if (name == "mcid_free") return n(p.free.numMcid);
  if (name == "sem_total") return n(p.capacity.numSem);
  if (name == "sem_free") return n(p.free.numSem);
  if (name == "dram_total") return n(p.capacity.ddrSize / kMiB);
  if (name == "dram_free") return n(p.free.ddrSize / kMiB);
  if (name == "networks_loaded" || name == "networks_active" || name == "constants_loaded" ||
      name == "constants_in_use") {
    uint64_t loads = 0, active = 0, constants = 0;
    for (auto& [id, weak] : files_) {
      auto f = weak.lock();
      if (!f || f->partition.get() != &p) continue;
      loads += f->loads.size();
      active += f->activations.size();
      for (auto& [dbc, act] : f->activations)
        if (act->program && act->program->needs().constantsBytes > 0) ++constants;
    }
    if (name == "networks_loaded") return n(loads);
    if (name == "networks_active") return n(active);
    return n(constants);
  }
  if (name == "device/partition/parent") return n(index_);
  if (name == "device/partition/owner_uid") return n(p.ownerUid);
  if (name == "device/partition/owner_gid") return n(p.ownerGid);
  if (name == "device/partition/mode") {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o\n", p.mode);
    return std::string(buf);
  }
  if (name == "device/partition/holder_pid") return std::to_string(p.holderPid) + "\n";
  if (name == "device/partition/label") return p.label + "\n";
  return std::nullopt;  // status, versions, PCI ids, shm dir and pid: the parent's
}

}  // namespace qaic::emu
