// SPDX-License-Identifier: Apache-2.0
// One device's lifecycle and faults: construction, opening and releasing its files, the DBCs
// and resources activations draw and give back, the end of activations (release_dbc), shutdown,
// reset, the error state, removal, the end of partitions, and the faults a channel meets (an
// injected DMA failure, a hung NSP).
#include "Device.hpp"

#include <algorithm>
#include <cerrno>

#include "FreedMemory.hpp"
#include "Log.hpp"

namespace qaic::emu {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

rt::Resources totalsOf(const DeviceConfig& c) {
  return rt::Resources{c.nsps, c.mcids, c.semaphores, c.dbcs, c.ddrMb * kMiB};
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
  if (!ctx_.peerGroups) ctx_.peerGroups = std::make_shared<PeerGroups>(ctx_.semaphoreTimeout);
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

// ---- DBCs and resources: what an activation draws and gives back ------------------------------

int Device::drawPoolLocked(OpenFile& f, uint32_t namedGroup, const rt::Resources& need, rt::Resources*& pool,
                           uint32_t& groupId) {
  pool = f.pool(free_);
  groupId = 0;
  if (namedGroup != 0) {
    auto g = f.groups.find(namedGroup);
    if (g == f.groups.end()) return EINVAL;  // released meanwhile, or never this file's
    pool = &g->second.free;
    groupId = namedGroup;
  } else if (std::any_of(f.groups.begin(), f.groups.end(), [](const auto& g) { return !g.second.named; })) {
    pool = nullptr;
    for (auto& [id, g] : f.groups) {
      if (!g.named && g.free.covers(need)) {
        pool = &g.free;
        groupId = id;
        break;
      }
    }
    if (!pool) return ENOSPC;
  }
  rt::Resources withoutDdr = need;
  withoutDdr.ddrSize = 0;
  if (!pool->covers(withoutDdr)) return ENOSPC;
  return 0;
}

uint32_t Device::firstFreeDbcLocked() const {
  uint32_t id = 0;
  while (id < dbcs_.size() && dbcs_[id]) ++id;
  return id;
}

void Device::giveBackLocked(OpenFile& f, uint32_t groupId, const rt::Resources& charged) {
  if (groupId != 0) {
    auto g = f.groups.find(groupId);
    if (g != f.groups.end()) g->second.free += charged;
  } else {
    *f.pool(free_) += charged;
  }
}

std::shared_ptr<Activation> Device::detachActivation(OpenFile& f, uint32_t dbcId) {
  auto it = f.activations.find(dbcId);
  if (it == f.activations.end()) return nullptr;
  auto act = it->second;
  f.activations.erase(it);
  dbcs_[dbcId].reset();
  if (dbcState_[dbcId] == DbcState::Assigned) dbcState_[dbcId] = DbcState::Idle;  // not a reset
  giveBackLocked(f, act->groupId, act->charged);
  if (act->constants && --act->constants->activations == 0) {
    rt::Resources constants;
    constants.ddrSize = act->constants->bytes;
    giveBackLocked(f, act->constants->groupId, constants);
    act->constants->bytes = 0;
  }
  return act;
}

// ---- Ending activations: stopping, abort, shutdown, reset, error, removal ----------------------

void Device::retire(Activation& act, uint16_t code, driver::DeviceStatus status) {
  if (act.peer) {
    // First, so that its own channel, maybe waiting in a collective for the others, can stop.
    std::string what = "was deactivated";
    if (code == driver::DBC_COMPLETION_DEVICE_RESET) {
      what = "was reset";
    } else if (status == driver::DeviceStatus::Removed) {
      what = "was removed";
    } else {
      std::lock_guard lock(mutex_);
      if (stopped_)
        what = "stopped (the emulator is shutting down)";
      else if (status_ == Status::Error)
        what = "reported a fatal error";
    }
    act.peer->breakGroup(what);
  }
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

void Device::breakPeerGroups(const std::string& what) {
  std::vector<std::shared_ptr<PeerMember>> members;
  {
    std::lock_guard lock(mutex_);
    for (const auto& act : dbcs_)
      if (act && act->peer) members.push_back(act->peer);
  }
  for (const auto& member : members) member->breakGroup(what);
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
  std::vector<std::shared_ptr<Partition>> partitions;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [id, partition] : partitions_) partitions.push_back(partition);
    partitions.insert(partitions.end(), removedPartitions_.begin(), removedPartitions_.end());
  }
  {
    // The BOs freed from here on (every open file's, as the instance goes) leave their pages to
    // clients that still map them, as a card's do.
    std::lock_guard lock(memoryMutex_);
    if (memory_) memory_->keepReleasedPages();
    for (const auto& partition : partitions)
      if (partition->memory) partition->memory->keepReleasedPages();
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

// ---- Faults a channel meets (ChannelHost) -------------------------------------------------------

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

}  // namespace qaic::emu
