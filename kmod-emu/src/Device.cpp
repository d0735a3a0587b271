#include "Device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>
#include <sstream>

#include "Log.hpp"

namespace qaic::emu {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

ResourceCounts totalsOf(const DeviceConfig& c) {
  return ResourceCounts{c.nsps, c.mcids, c.semaphores, c.dbcs, c.ddrMb * kMiB};
}

const std::vector<std::string> kFaultFiles = {
    "qaic-emu/fault/nsp_hang", "qaic-emu/fault/dma_fail", "qaic-emu/fault/reset",
    "qaic-emu/fault/remove", "qaic-emu/fault/control_hang"};

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
      config_(std::move(config)),
      ctx_(std::move(context)),
      total_(totalsOf(config_)),
      free_(total_),
      dbcs_(config_.dbcs),
      dbcGeneration_(config_.dbcs, 0),
      dbcState_(config_.dbcs, DbcState::Idle),
      nspHang_(config_.faults.nspHang),
      dmaFailCode_(config_.faults.dmaFailCode),
      dmaFailCount_(config_.faults.dmaFailCount) {
  if (!ctx_.memories) ctx_.memories = std::make_shared<MemoryRegistry>();
  if (!ctx_.parameters) ctx_.parameters = std::make_shared<ModuleParameters>();
}

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
  for (auto& act : stopping) retire(*act, driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped);
  {
    // Handles go last: a stopped channel no longer reaches their BOs.
    std::lock_guard lock(mutex_);
    std::vector<uint32_t> handles;
    for (const auto& [handle, bo] : file->bos) handles.push_back(handle);
    for (uint32_t handle : handles) dropHandle(*file, handle);
    file->prime.clear();
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
  if (dbcState_[dbcId] == DbcState::Assigned) dbcState_[dbcId] = DbcState::Idle;  // not a reset
  if (act->groupId != 0) {
    auto g = f.groups.find(act->groupId);
    if (g != f.groups.end()) g->second.free += act->charged;
  } else {
    *f.pool(free_) += act->charged;
  }
  return act;
}

void Device::retire(Activation& act, uint16_t code, driver::DeviceStatus status) {
  stopChannel(act, code, status);
  std::map<uint32_t, std::shared_ptr<BufferObject>> sliced;
  {
    std::lock_guard lock(mutex_);
    sliced.swap(act.slicedBos);
    for (auto& [handle, bo] : sliced) {
      if (!bo->sliced || bo->dbcId != act.dbcId) continue;
      bo->sliced = false;
      bo->slices.clear();
    }
  }
  // BOs no handle names any more, and their memory, go here: outside the mutex, as unmapping
  // and unlinking a large file takes a while.
  sliced.clear();
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
  for (auto& act : stopping) retire(*act, code, status);
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

// The DBCs that were assigned go through the states mainline reports around a subsystem
// restart (BEFORE_SHUTDOWN, AFTER_SHUTDOWN, BEFORE_POWER_UP, AFTER_POWER_UP) back to idle.
void Device::reset() {
  std::vector<uint32_t> assigned;
  {
    std::lock_guard lock(mutex_);
    status_ = Status::Initializing;
    for (uint32_t i = 0; i < dbcs_.size(); ++i) {
      if (!dbcs_[i]) continue;
      assigned.push_back(i);
      dbcState_[i] = DbcState::BeforeShutdown;
    }
  }
  logInfo("accel" + std::to_string(index_) + ": reset");
  abortActivations(driver::DBC_COMPLETION_DEVICE_RESET, driver::DeviceStatus::Resetting);
  std::lock_guard lock(mutex_);
  for (DbcState s : {DbcState::AfterShutdown, DbcState::BeforePowerUp, DbcState::AfterPowerUp,
                     DbcState::Idle})
    for (uint32_t i : assigned)
      if (!dbcs_[i]) dbcState_[i] = s;
  endPartitionsLocked();  // a reset loses the firmware's reservations, as on the card
  nspHang_ = false;
  controlHang_ = false;
  dmaFailCount_ = 0;
  status_ = Status::Ready;
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

// ---- ChannelHost -------------------------------------------------------------------------------

std::shared_ptr<BufferObject> Device::translate(const Activation& act, uint32_t handle,
                                                uint64_t offset, uint64_t length, uint32_t dir) {
  std::lock_guard lock(mutex_);
  auto it = act.slicedBos.find(handle);
  if (it == act.slicedBos.end()) return nullptr;
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

// ---- sysfs and the status report -------------------------------------------------------------

namespace {

constexpr const char* kEmuDir = "qaic-emu/";

const std::vector<std::string> kFigureNames = {
    "status",          "nsp_total",        "nsp_free",          "vc_total",
    "vc_free",         "mcid_total",       "mcid_free",         "sem_total",
    "sem_free",        "dram_total",       "dram_free",         "networks_loaded",
    "networks_active", "constants_loaded", "constants_in_use",  "pci_address",
    "fw_version",      "hw_version",       "sku",               "nsp_frequency_mhz"};
const std::vector<std::string> kPciNames = {"device/vendor", "device/device", "device/ce_count",
                                            "device/ue_count", "device/ue_nonfatal_count"};
const std::vector<std::string> kPartitionFiles = {"parent", "owner_uid",  "owner_gid",
                                                  "mode",   "holder_pid", "label"};

template <std::size_t N>
void copyText(char (&to)[N], const std::string& from) {
  std::memset(to, 0, N);
  std::memcpy(to, from.data(), std::min(from.size(), N - 1));
}

// A figure of the report as its qaic-emu/ file shows it; nullopt for another name.
std::optional<std::string> renderFigure(const driver::DeviceStatusResponse& r, const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == "status") return std::string(driver::firmwareStateName(r.firmwareState)) + "\n";
  if (name == "nsp_total") return n(r.nspTotal);
  if (name == "nsp_free") return n(r.nspFree);
  if (name == "vc_total") return n(r.vcTotal);
  if (name == "vc_free") return n(r.vcFree);
  if (name == "mcid_total") return n(r.mcidTotal);
  if (name == "mcid_free") return n(r.mcidFree);
  if (name == "sem_total") return n(r.semTotal);
  if (name == "sem_free") return n(r.semFree);
  if (name == "dram_total") return n(r.ddrTotalBytes / kMiB);
  if (name == "dram_free") return n(r.ddrFreeBytes / kMiB);
  if (name == "networks_loaded") return n(r.networksLoaded);
  if (name == "networks_active") return n(r.networksActive);
  if (name == "constants_loaded") return n(r.constantsLoaded);
  if (name == "constants_in_use") return n(r.constantsInUse);
  if (name == "fw_version") return std::string(r.fwVersion) + "\n";
  if (name == "hw_version") return std::string(r.hwVersion) + "\n";
  if (name == "sku") return std::string(r.sku) + "\n";
  if (name == "nsp_frequency_mhz") return n(r.nspFrequencyMhz);
  return std::nullopt;
}

}  // namespace

std::string Device::pciAddress() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", index_ + 1);
  return buf;
}

std::vector<std::string> Device::attributeNames(uint32_t dbcs) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < dbcs; ++i) names.push_back("dbc" + std::to_string(i) + "_state");
  names.insert(names.end(), kPciNames.begin(), kPciNames.end());
  for (const auto& n : kFigureNames) names.push_back(kEmuDir + n);
  names.push_back(std::string(kEmuDir) + "shm_dir");
  names.push_back(std::string(kEmuDir) + "pid");
  names.insert(names.end(), kFaultFiles.begin(), kFaultFiles.end());
  return names;
}

std::vector<std::string> Device::writableAttributeNames() { return kFaultFiles; }

std::vector<std::string> Device::partitionAttributeNames() {
  std::vector<std::string> names;
  for (const std::string& n : attributeNames(0))
    if (!attributeWritable(n)) names.push_back(n);
  for (const auto& n : kPartitionFiles) names.push_back(std::string(kEmuDir) + "partition/" + n);
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

driver::DeviceStatusResponse Device::statusReport(const Partition* partition) {
  std::lock_guard lock(mutex_);
  return statusReportLocked(partition);
}

driver::DeviceStatusResponse Device::statusReportLocked(const Partition* partition) {
  driver::DeviceStatusResponse r{};
  r.magic = driver::kDeviceStatusMagic;
  r.version = driver::kDeviceStatusVersion;
  r.firmwareState = static_cast<uint32_t>(status_ == Status::Ready          ? driver::FirmwareState::Ready
                                          : status_ == Status::Initializing ? driver::FirmwareState::Initializing
                                                                            : driver::FirmwareState::Error);
  const ResourceCounts& total = partition ? partition->capacity : total_;
  const ResourceCounts& free = partition ? partition->free : free_;
  r.nspTotal = total.nsp, r.nspFree = free.nsp;
  r.mcidTotal = total.mcid, r.mcidFree = free.mcid;
  r.semTotal = total.sem, r.semFree = free.sem;
  r.vcTotal = total.vc, r.vcFree = free.vc;
  r.ddrTotalBytes = total.ddr, r.ddrFreeBytes = free.ddr;
  // A load counts as a network; its constants count once an activation uses them.
  for (auto& [id, weak] : files_) {
    auto f = weak.lock();
    if (!f || (partition != nullptr && f->partition.get() != partition)) continue;
    r.networksLoaded += static_cast<uint32_t>(f->loads.size());
    r.networksActive += static_cast<uint32_t>(f->activations.size());
    std::set<const void*> withConstants;
    for (auto& [dbc, act] : f->activations) {
      if (!act->program || act->program->needs().constantsBytes == 0) continue;
      withConstants.insert(act->load.get());
      ++r.constantsInUse;
    }
    r.constantsLoaded += static_cast<uint32_t>(withConstants.size());
  }
  r.nspFrequencyMhz = config_.nspFrequencyMhz;
  copyText(r.fwVersion, config_.fwVersion);
  copyText(r.hwVersion, config_.hwVersion);
  copyText(r.sku, config_.sku);
  return r;
}

std::optional<std::string> Device::readAttribute(const std::string& name, uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  const Partition* partition = nullptr;
  if (partitionId != 0) {
    auto it = partitions_.find(partitionId);
    if (it == partitions_.end()) return std::nullopt;
    partition = it->second.get();
    if (auto own = readPartitionAttribute(*partition, name)) return own;
    if (name.starts_with("dbc") || attributeWritable(name)) return std::nullopt;
  }
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == "device/vendor") return std::string("0x17cb\n");
  if (name == "device/device") return std::string("0xa100\n");
  // The emulated card raises no RAS events: its error counters stay 0.
  if (name == "device/ce_count" || name == "device/ue_count" || name == "device/ue_nonfatal_count")
    return std::string("0\n");
  if (name.starts_with(kEmuDir)) {
    const std::string own = name.substr(std::strlen(kEmuDir));
    if (own == "pci_address") return pciAddress() + "\n";
    if (own == "shm_dir") return ctx_.shm->path() + "\n";
    if (own == "pid") return n(static_cast<uint64_t>(getpid()));
    if (own == "fault/nsp_hang") return std::string(nspHang_ ? "1\n" : "0\n");
    if (own == "fault/control_hang") return std::string(controlHang_ ? "1\n" : "0\n");
    if (own == "fault/dma_fail")
      return std::to_string(dmaFailCode_) + " " + std::to_string(dmaFailCount_) + "\n";
    if (own == "fault/reset" || own == "fault/remove") return std::string("0\n");
    return renderFigure(statusReportLocked(partition), own);
  }
  if (name.size() > 9 && name.starts_with("dbc") && name.ends_with("_state")) {
    const std::string digits = name.substr(3, name.size() - 9);
    uint32_t i = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (ec == std::errc() && p == digits.data() + digits.size() && i < dbcState_.size())
      return n(static_cast<uint64_t>(dbcState_[i]));
  }
  return std::nullopt;
}

int Device::writeAttribute(const std::string& name, const std::string& text) {
  bool ok = false;
  auto values = parseNumbers(text, ok);
  if (!ok || values.empty()) return EINVAL;
  const std::string fault = std::string(kEmuDir) + "fault/";
  if (name == fault + "nsp_hang" || name == fault + "control_hang") {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    {
      std::lock_guard lock(mutex_);
      (name.ends_with("nsp_hang") ? nspHang_ : controlHang_) = values[0] == 1;
    }
    faultChanged_.notify_all();
    return 0;
  }
  if (name == fault + "dma_fail") {
    // "<code> [count]": the next count (default 1) requests complete with code; "0" clears.
    if (values.size() > 2 || values[0] > driver::DBC_COMPLETION_ABORTED) return EINVAL;
    std::lock_guard lock(mutex_);
    dmaFailCode_ = static_cast<uint16_t>(values[0]);
    dmaFailCount_ = values[0] == 0 ? 0 : static_cast<uint32_t>(values.size() == 2 ? values[1] : 1);
    return 0;
  }
  if (name == fault + "reset" || name == fault + "remove") {
    if (values.size() != 1 || values[0] != 1) return EINVAL;
    if (name.ends_with("reset"))
      reset();
    else
      remove();
    return 0;
  }
  return EACCES;
}

// A partition's own files; the rest of its directory is its parent's.
std::optional<std::string> Device::readPartitionAttribute(const Partition& p,
                                                          const std::string& name) {
  const std::string dir = std::string(kEmuDir) + "partition/";
  if (!name.starts_with(dir)) return std::nullopt;
  const std::string own = name.substr(dir.size());
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (own == "parent") return n(index_);
  if (own == "owner_uid") return n(p.ownerUid);
  if (own == "owner_gid") return n(p.ownerGid);
  if (own == "mode") {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o\n", p.mode);
    return std::string(buf);
  }
  if (own == "holder_pid") return std::to_string(p.holderPid) + "\n";
  if (own == "label") return p.label + "\n";
  return std::nullopt;
}

}  // namespace qaic::emu
