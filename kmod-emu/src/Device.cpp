#include "Device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "FreedMemory.hpp"
#include "Log.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::emu {
namespace sysfs = driver::sysfs;
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

rt::Resources totalsOf(const DeviceConfig& c) {
  return rt::Resources{c.nsps, c.mcids, c.semaphores, c.dbcs, c.ddrMb * kMiB};
}

const std::vector<std::string> kFaultFiles = {sysfs::kFaultNspHang,  sysfs::kFaultDmaFail, sysfs::kFaultError,
                                              sysfs::kFaultReset,    sysfs::kFaultRemove,  sysfs::kFaultControlHang,
                                              sysfs::kFaultResetHang};

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
      dbcState_(config_.dbcs, DbcState::Idle),
      nspHang_(config_.faults.nspHang),
      dmaFailCode_(config_.faults.dmaFailCode),
      dmaFailCount_(config_.faults.dmaFailCount) {
  if (!ctx_.memories) ctx_.memories = std::make_shared<MemoryRegistry>();
  if (!ctx_.compute) ctx_.compute = std::make_shared<ComputePool>();
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
  stopping.clear();
  {
    // Handles go last: a stopped channel no longer reaches their BOs.
    std::lock_guard lock(mutex_);
    std::vector<uint32_t> handles;
    for (const auto& [handle, bo] : file->bos) handles.push_back(handle);
    for (uint32_t handle : handles) dropHandle(*file, handle);
    file->prime.clear();
  }
  boChanged_.notify_all();
  returnFreedMemoryToSystem();
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

void Device::abortActivations(uint16_t code, driver::DeviceStatus status, const Partition* partition) {
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
// The firmware boots within the write, unless the reset_hang fault holds it: then the reset
// waits for it at most mhi_timeout_ms, as mainline's MHI power-up does, and fails with
// ETIMEDOUT, leaving the card in Error (activations refused) until a reset that boots.
int Device::reset() {
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
  const auto bootDeadline = Clock::now() + ctx_.parameters->mhiTimeout();
  std::unique_lock lock(mutex_);
  faultChanged_.wait_until(lock, bootDeadline, [&] { return !resetHang_.load() || removed_.load() || stopped_; });
  for (DbcState s : {DbcState::AfterShutdown, DbcState::BeforePowerUp, DbcState::AfterPowerUp, DbcState::Idle})
    for (uint32_t i : assigned)
      if (!dbcs_[i]) dbcState_[i] = s;
  endPartitionsLocked();  // a reset loses the firmware's reservations, as on the card
  if (resetHang_.load()) {
    status_ = Status::Error;
    logInfo("accel" + std::to_string(index_) + ": MHI timeout: the firmware did not boot within " +
            std::to_string(ctx_.parameters->mhiTimeout().count()) + " ms (mhi_timeout_ms)");
    return ETIMEDOUT;
  }
  nspHang_ = false;
  controlHang_ = false;
  dmaFailCount_ = 0;
  status_ = Status::Ready;
  return 0;
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

// ---- ChannelHost -------------------------------------------------------------------------------

std::shared_ptr<BufferObject> Device::translate(const Activation& act, uint32_t handle, uint64_t offset,
                                                uint64_t length, uint32_t dir) {
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

// The STATUS query's figures as qaic-emu/ files.
const std::vector<std::string> kFigureNames = {sysfs::kEmuStatus,
                                               sysfs::kEmuNspTotal,
                                               sysfs::kEmuNspFree,
                                               sysfs::kEmuVcTotal,
                                               sysfs::kEmuVcFree,
                                               sysfs::kEmuMcidTotal,
                                               sysfs::kEmuMcidFree,
                                               sysfs::kEmuSemTotal,
                                               sysfs::kEmuSemFree,
                                               sysfs::kEmuDramTotal,
                                               sysfs::kEmuDramFree,
                                               sysfs::kEmuNetworksLoaded,
                                               sysfs::kEmuNetworksActive,
                                               sysfs::kEmuConstantsLoaded,
                                               sysfs::kEmuConstantsInUse,
                                               sysfs::kEmuPciAddress,
                                               sysfs::kEmuFwVersion,
                                               sysfs::kEmuHwVersion,
                                               sysfs::kEmuSku,
                                               sysfs::kEmuNspFrequencyMhz};
const std::vector<std::string> kPciNames = {sysfs::kPciVendor, sysfs::kPciDevice, sysfs::kCeCount, sysfs::kUeCount,
                                            sysfs::kUeNonfatalCount};
const std::vector<std::string> kPartitionFiles = {sysfs::kPartitionParent,    sysfs::kPartitionOwnerUid,
                                                  sysfs::kPartitionOwnerGid,  sysfs::kPartitionMode,
                                                  sysfs::kPartitionHolderPid, sysfs::kPartitionLabel};

template <std::size_t N>
void copyText(char (&to)[N], const std::string& from) {
  std::memset(to, 0, N);
  std::memcpy(to, from.data(), std::min(from.size(), N - 1));
}

// A figure of the report as its qaic-emu/ file shows it; nullopt for another name.
std::optional<std::string> renderFigure(const driver::DeviceStatusResponse& r, const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == sysfs::kEmuStatus) return std::string(driver::firmwareStateName(r.firmwareState)) + "\n";
  if (name == sysfs::kEmuNspTotal) return n(r.nspTotal);
  if (name == sysfs::kEmuNspFree) return n(r.nspFree);
  if (name == sysfs::kEmuVcTotal) return n(r.vcTotal);
  if (name == sysfs::kEmuVcFree) return n(r.vcFree);
  if (name == sysfs::kEmuMcidTotal) return n(r.mcidTotal);
  if (name == sysfs::kEmuMcidFree) return n(r.mcidFree);
  if (name == sysfs::kEmuSemTotal) return n(r.semTotal);
  if (name == sysfs::kEmuSemFree) return n(r.semFree);
  if (name == sysfs::kEmuDramTotal) return n(r.ddrTotalBytes / kMiB);
  if (name == sysfs::kEmuDramFree) return n(r.ddrFreeBytes / kMiB);
  if (name == sysfs::kEmuNetworksLoaded) return n(r.networksLoaded);
  if (name == sysfs::kEmuNetworksActive) return n(r.networksActive);
  if (name == sysfs::kEmuConstantsLoaded) return n(r.constantsLoaded);
  if (name == sysfs::kEmuConstantsInUse) return n(r.constantsInUse);
  if (name == sysfs::kEmuFwVersion) return std::string(r.fwVersion) + "\n";
  if (name == sysfs::kEmuHwVersion) return std::string(r.hwVersion) + "\n";
  if (name == sysfs::kEmuSku) return std::string(r.sku) + "\n";
  if (name == sysfs::kEmuNspFrequencyMhz) return n(r.nspFrequencyMhz);
  return std::nullopt;
}

}  // namespace

std::string Device::pciAddress() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", index_ + 1);
  return buf;
}

// Identity and telemetry: the firmware's strings under qaic-emu/ (mainline's driver publishes
// none of them), the PCI function's link attributes (the kernel's own names and formats) and an
// hwmon directory (millidegrees, microwatts) under device/.
namespace {
const std::string kHwmon0 = std::string(sysfs::kHwmonDir) + "/hwmon0/";
}  // namespace

const std::vector<std::string> Device::kIdentityAttributes = {
    sysfs::kEmuSerial,
    sysfs::kEmuBoardSerial,
    sysfs::kEmuFwQcImageVersion,
    sysfs::kEmuFwOemImageVersion,
    sysfs::kEmuFwImageVariant,
    sysfs::kEmuNspVersion,
    sysfs::kEmuNspQcImageVersion,
    sysfs::kEmuNspImageVariant,
    sysfs::kEmuDeviceCapabilities,
    sysfs::kEmuDdrFrequencyMhz,
    sysfs::kMaxLinkSpeed,
    sysfs::kMaxLinkWidth,
    sysfs::kCurrentLinkSpeed,
    sysfs::kCurrentLinkWidth,
    kHwmon0 + sysfs::kHwmonName,
    kHwmon0 + sysfs::kHwmonTemperature,
    kHwmon0 + sysfs::kHwmonPower,
    kHwmon0 + sysfs::kHwmonPowerCap,
};

// Caller holds mutex_.
std::optional<std::string> Device::readIdentityAttribute(const std::string& name) const {
  const DeviceConfig& c = config_;
  auto line = [](const std::string& text) { return text + "\n"; };
  if (name == sysfs::kEmuSerial) return line(c.serial);
  if (name == sysfs::kEmuBoardSerial) return line(c.boardSerial);
  if (name == sysfs::kEmuFwQcImageVersion) return line(c.fwQcImageVersion);
  if (name == sysfs::kEmuFwOemImageVersion) return line(c.fwOemImageVersion);
  if (name == sysfs::kEmuFwImageVariant) return line(c.fwImageVariant);
  if (name == sysfs::kEmuNspVersion) return line(c.fwVersion);
  if (name == sysfs::kEmuNspQcImageVersion) return line(c.nspQcImageVersion);
  if (name == sysfs::kEmuNspImageVariant) return line(c.nspImageVariant);
  if (name == sysfs::kEmuDeviceCapabilities) {
    std::string text;
    for (const auto& [capability, supported] : c.capabilities)
      text += (text.empty() ? "" : " ") + capability + (supported ? "+" : "-");
    return line(text);
  }
  if (name == sysfs::kEmuDdrFrequencyMhz) return line(std::to_string(c.ddrFrequencyMhz));
  if (name == sysfs::kMaxLinkSpeed) return line(c.maxLinkSpeed);
  if (name == sysfs::kMaxLinkWidth) return line(std::to_string(c.maxLinkWidth));
  if (name == sysfs::kCurrentLinkSpeed) return line(c.currentLinkSpeed);
  if (name == sysfs::kCurrentLinkWidth) return line(std::to_string(c.currentLinkWidth));
  if (name == sysfs::kNumaNode) return c.numaNode ? line(std::to_string(*c.numaNode)) : std::string("-1\n");
  if (name == kHwmon0 + sysfs::kHwmonName) return line("qaic");
  // The NSPs working (claimed by activations or partitions) draw power, up to the cap.
  const double busyNsps = static_cast<double>(total_.numNsp - free_.numNsp);
  const double powerW = std::min(c.tdpCapW, c.idlePowerW + c.powerPerNspW * busyNsps);
  if (name == kHwmon0 + sysfs::kHwmonPower) return line(std::to_string(std::llround(powerW * 1e6)));
  if (name == kHwmon0 + sysfs::kHwmonPowerCap) return line(std::to_string(std::llround(c.tdpCapW * 1e6)));
  if (name == kHwmon0 + sysfs::kHwmonTemperature)
    return line(std::to_string(std::llround((c.idleTemperatureC + c.degreesPerW * (powerW - c.idlePowerW)) * 1000)));
  return std::nullopt;
}

std::vector<std::string> Device::attributeNames(uint32_t dbcs) {
  std::vector<std::string> names(kIdentityAttributes.begin(), kIdentityAttributes.end());
  names.push_back(sysfs::kNumaNode);
  for (uint32_t i = 0; i < dbcs; ++i) names.push_back(sysfs::dbcState(i));
  names.insert(names.end(), kPciNames.begin(), kPciNames.end());
  names.insert(names.end(), kFigureNames.begin(), kFigureNames.end());
  names.push_back(sysfs::kEmuShmDir);
  names.push_back(sysfs::kEmuPid);
  names.push_back(sysfs::kEmuComputeThreads);
  names.push_back(sysfs::kEmuComputeBusy);
  names.push_back(sysfs::kEmuComputeBusyMax);
  names.push_back(sysfs::kEmuDoorbellSleeps);
  names.push_back(sysfs::kEmuDoorbellPolls);
  names.push_back(sysfs::kEmuResponseInterrupts);
  names.push_back(sysfs::kEmuResponseWakes);
  names.insert(names.end(), kFaultFiles.begin(), kFaultFiles.end());
  return names;
}

std::vector<std::string> Device::writableAttributeNames() { return kFaultFiles; }

std::vector<std::string> Device::partitionAttributeNames() {
  std::vector<std::string> names;
  for (const std::string& n : attributeNames(0))
    if (!attributeWritable(n)) names.push_back(n);
  names.insert(names.end(), kPartitionFiles.begin(), kPartitionFiles.end());
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
  const rt::Resources& total = partition ? partition->capacity : total_;
  const rt::Resources& free = partition ? partition->free : free_;
  r.nspTotal = total.numNsp, r.nspFree = free.numNsp;
  r.mcidTotal = total.numMcid, r.mcidFree = free.numMcid;
  r.semTotal = total.numSem, r.semFree = free.numSem;
  r.vcTotal = total.numVc, r.vcFree = free.numVc;
  r.ddrTotalBytes = total.ddrSize, r.ddrFreeBytes = free.ddrSize;
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
    // A partition shows its parent card's identity and telemetry, not its DBCs or fault files.
    if (name.starts_with("dbc") || attributeWritable(name)) return std::nullopt;
  }
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == sysfs::kPciVendor) return std::string("0x17cb\n");
  if (name == sysfs::kPciDevice) return std::string("0xa100\n");
  // The emulated card raises no RAS events: its error counters stay 0.
  if (name == sysfs::kCeCount || name == sysfs::kUeCount || name == sysfs::kUeNonfatalCount) return std::string("0\n");
  if (auto identity = readIdentityAttribute(name)) return identity;
  if (name == sysfs::kEmuPciAddress) return pciAddress() + "\n";
  if (name == sysfs::kEmuShmDir) return ctx_.shm->path() + "\n";
  if (name == sysfs::kEmuPid) return n(static_cast<uint64_t>(getpid()));
  if (name == sysfs::kEmuComputeThreads) return n(ctx_.compute->cores());
  if (name == sysfs::kEmuComputeBusy) return n(ctx_.compute->busy());
  if (name == sysfs::kEmuComputeBusyMax) return n(ctx_.compute->busyMax());
  if (name == sysfs::kFaultNspHang) return std::string(nspHang_ ? "1\n" : "0\n");
  if (name == sysfs::kFaultControlHang) return std::string(controlHang_ ? "1\n" : "0\n");
  if (name == sysfs::kFaultResetHang) return std::string(resetHang_ ? "1\n" : "0\n");
  if (name == sysfs::kEmuDoorbellSleeps) return n(datapath_.doorbellSleeps.load());
  if (name == sysfs::kEmuDoorbellPolls) return n(datapath_.doorbellPolls.load());
  if (name == sysfs::kEmuResponseInterrupts) return n(datapath_.responseInterrupts.load());
  if (name == sysfs::kEmuResponseWakes) return n(datapath_.responseWakes.load());
  if (name == sysfs::kFaultDmaFail) return std::to_string(dmaFailCode_) + " " + std::to_string(dmaFailCount_) + "\n";
  if (name == sysfs::kFaultError) return std::string(status_ == Status::Error ? "1\n" : "0\n");
  if (name == sysfs::kFaultReset || name == sysfs::kFaultRemove) return std::string("0\n");
  if (name.starts_with(sysfs::kEmuDir)) return renderFigure(statusReportLocked(partition), name);
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
  if (name == sysfs::kFaultNspHang || name == sysfs::kFaultControlHang || name == sysfs::kFaultResetHang) {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    {
      std::lock_guard lock(mutex_);
      (name == sysfs::kFaultNspHang       ? nspHang_
       : name == sysfs::kFaultControlHang ? controlHang_
                                          : resetHang_) = values[0] == 1;
    }
    faultChanged_.notify_all();
    return 0;
  }
  if (name == sysfs::kFaultDmaFail) {
    // "<code> [count]": the next count (default 1) requests complete with code; "0" clears.
    if (values.size() > 2 || values[0] > driver::DBC_COMPLETION_ABORTED) return EINVAL;
    std::lock_guard lock(mutex_);
    dmaFailCode_ = static_cast<uint16_t>(values[0]);
    dmaFailCount_ = values[0] == 0 ? 0 : static_cast<uint32_t>(values.size() == 2 ? values[1] : 1);
    return 0;
  }
  if (name == sysfs::kFaultError) {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    if (values[0] == 1) {
      enterError();
    } else {
      std::lock_guard lock(mutex_);
      if (status_ == Status::Error) status_ = Status::Ready;
    }
    return 0;
  }
  if (name == sysfs::kFaultReset || name == sysfs::kFaultRemove) {
    if (values.size() != 1 || values[0] != 1) return EINVAL;
    if (name == sysfs::kFaultReset) return reset();
    remove();
    return 0;
  }
  return EACCES;
}

// A partition's own files; the rest of its directory is its parent's.
std::optional<std::string> Device::readPartitionAttribute(const Partition& p, const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == sysfs::kPartitionParent) return n(index_);
  if (name == sysfs::kPartitionOwnerUid) return n(p.ownerUid);
  if (name == sysfs::kPartitionOwnerGid) return n(p.ownerGid);
  if (name == sysfs::kPartitionMode) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o\n", p.mode);
    return std::string(buf);
  }
  if (name == sysfs::kPartitionHolderPid) return std::to_string(p.holderPid) + "\n";
  if (name == sysfs::kPartitionLabel) return p.label + "\n";
  return std::nullopt;
}

}  // namespace qaic::emu
