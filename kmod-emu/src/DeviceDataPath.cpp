// SPDX-License-Identifier: Apache-2.0
// The data path: buffer objects (CREATE_BO, MMAP_BO, their GEM handles with GEM_CLOSE, FLINK
// and OPEN, and PRIME), slices, EXECUTE, WAIT, perf stats and the DBC window's description,
// validated the way the mainline driver does; and what a channel asks of the device while it
// moves a request (IOVA translation, a BO's completion).
#include <drm.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "Device.hpp"
#include "ExportSupervisor.hpp"
#include "UserMemory.hpp"
#include "driver/WindowFutex.hpp"

namespace qaic::emu {
namespace {

using driver::RequestElement;

bool semValid(const qaic_sem& s) {
  return s.pad == 0 && s.val <= driver::kSemaphoreMax && s.index < driver::kSemaphoresPerDbc &&
         s.cmd <= QAIC_SEM_WAIT_GT_0 && (s.flags & ~(QAIC_SEM_INSYNCFENCE | QAIC_SEM_OUTSYNCFENCE)) == 0;
}

// Upper bound on slices per BO and entries per execute: keeps user-sized copies bounded.
constexpr uint32_t kMaxEntries = 4096;

uint32_t loadReg(const Activation& a, std::size_t off) {
  return std::atomic_ref<uint32_t>(*a.reg(off)).load(std::memory_order_acquire);
}

}  // namespace

int Device::createBo(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_create_bo>(c);
  if (args.pad != 0 || args.size == 0 || args.size > driver::kMaxBoBytes) return EINVAL;
  const uint64_t bytes = driver::alignUp(args.size, driver::kPageSize);
  // Offsets are never reused, and a page between two BOs stays a hole: an export's extent is its
  // BO's pages up to the next hole (BufferObject::import in libqaic).
  const uint64_t offset = ctx_.nextMmapOffset->fetch_add(bytes + driver::kPageSize);
  int err = 0;
  auto file = nodeMemory(f, err);
  if (!file) return err;
  auto memory = BufferMemory::create(std::move(file), offset, bytes, err);
  if (!memory) return err;
  auto bo = std::make_shared<BufferObject>();
  bo->size = args.size;
  bo->mmapOffset = offset;
  bo->memory = std::move(memory);
  ctx_.memories->add(bo->memory);
  {
    std::lock_guard lock(mutex_);
    args.handle = addHandle(f, bo);
  }
  if (args.handle == 0) return ENOSPC;  // the BO and its memory file go with `bo`
  argOut(c, args);
  return 0;
}

// An imported BO has no pages of this device to map at an offset: mainline's mmap() of it is
// EINVAL, and here, where the offset names the memory file to map, so is MMAP_BO.
std::shared_ptr<DeviceMemoryFile> Device::nodeMemory(const OpenFile& f, int& error) {
  std::lock_guard lock(memoryMutex_);
  std::shared_ptr<DeviceMemoryFile>& slot = f.partition ? f.partition->memory : memory_;
  if (slot) return slot;
  const unsigned node = f.partition ? f.partition->id : index_;
  const auto owner = f.partition ? ResolvedNodePolicy{f.partition->mode, f.partition->ownerUid, f.partition->ownerGid}
                                 : ctx_.nodePolicy;
  try {
    slot = ctx_.shm->createDeviceMemory(driver::deviceMemoryFileName(node), owner.uid, owner.gid, owner.mode);
  } catch (const std::system_error& e) {
    error = e.code().value() == ENOSPC ? ENOMEM : e.code().value();
    return nullptr;
  }
  ctx_.memories->addDeviceFile(*slot);
  return slot;
}

int Device::mmapBo(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_mmap_bo>(c);
  if (args.pad != 0) return EINVAL;
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return ENOENT;
  if (it->second->imported()) return EINVAL;
  args.offset = it->second->mmapOffset;
  argOut(c, args);
  return 0;
}

// ---- GEM handles --------------------------------------------------------------------------------

uint32_t Device::addHandle(OpenFile& f, const std::shared_ptr<BufferObject>& bo) {
  if (f.nextHandle > 0x7fffffffu) return 0;  // IOVAs carry 31 handle bits
  const uint32_t handle = f.nextHandle++;
  f.bos[handle] = bo;
  ++bo->handles;
  return handle;
}

bool Device::dropHandle(OpenFile& f, uint32_t handle) {
  auto it = f.bos.find(handle);
  if (it == f.bos.end()) return false;
  std::shared_ptr<BufferObject> bo = std::move(it->second);
  f.bos.erase(it);
  std::erase_if(f.prime, [&](const auto& entry) { return entry.second == handle; });
  // A flink name lives as long as some handle names the object.
  if (--bo->handles == 0 && bo->flinkName != 0) {
    flinkNames_.erase(bo->flinkName);
    bo->flinkName = 0;
  }
  return true;
}

int Device::gemClose(OpenFile& f, const IoctlCall& c) {
  const auto args = argIn<drm_gem_close>(c);
  if (args.pad != 0) return EINVAL;
  std::shared_ptr<BufferObject> last;  // freed outside the mutex when this was the last holder
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return EINVAL;
  last = it->second;
  dropHandle(f, args.handle);
  return 0;
}

int Device::gemFlink(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<drm_gem_flink>(c);
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return ENOENT;
  BufferObject& bo = *it->second;
  if (bo.flinkName == 0) {
    bo.flinkName = nextFlinkName_++;
    flinkNames_[bo.flinkName] = it->second;
  }
  args.name = bo.flinkName;
  argOut(c, args);
  return 0;
}

int Device::gemOpen(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<drm_gem_open>(c);
  std::lock_guard lock(mutex_);
  auto it = flinkNames_.find(args.name);
  std::shared_ptr<BufferObject> bo = it == flinkNames_.end() ? nullptr : it->second.lock();
  if (!bo) return ENOENT;
  args.handle = addHandle(f, bo);
  if (args.handle == 0) return ENOSPC;
  args.size = bo->size;
  argOut(c, args);
  return 0;
}

// ---- PRIME --------------------------------------------------------------------------------------

// The kernel creates the export's descriptor in the caller; a FUSE server cannot put one in
// another process. Two ways stand in for it:
// - the emulator's own export supervisor (ExportSupervisor, under `qaic-emu --namespace`) asks
//   on the caller's open file with `fd` -1: the descriptor is made here, in the emulator
//   (BufferMemory::openExport), and the supervisor installs it in the caller;
// - any other caller opens the node's memory file itself, positioned at the BO's offset
//   (libqaic's DeviceNode::primeHandleToFd when the plain call gets EBADF), and passes that
//   descriptor in `fd`. The device checks it as the kernel would have made it: this BO's memory,
//   read-write exactly when DRM_RDWR is asked, close-on-exec exactly when DRM_CLOEXEC is. The
//   descriptor comes back unchanged.
int Device::primeHandleToFd(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<drm_prime_handle>(c);
  if (args.flags & ~static_cast<uint32_t>(DRM_CLOEXEC | DRM_RDWR)) return EINVAL;
  std::shared_ptr<BufferMemory> memory;
  {
    std::lock_guard lock(mutex_);
    auto it = f.bos.find(args.handle);
    if (it == f.bos.end()) return ENOENT;
    memory = it->second->memory;
  }
  const pid_t tgid = threadGroupOf(c.pid);
  if (tgid == ::getpid() && args.fd == -1) {
    auto exported = memory->openExport((args.flags & DRM_RDWR) ? O_RDWR : O_RDONLY);
    if (!exported) return exported.error();
    std::lock_guard lock(mutex_);
    if (!f.bos.contains(args.handle)) return ENOENT;  // closed meanwhile; `exported` closes
    f.prime[memory->identity()] = args.handle;
    args.fd = exported->release();  // the supervisor's to hand on and close
    exportHandOver().store(args.fd, std::memory_order_release);
    argOut(c, args);
    return 0;
  }
  if (tgid <= 0 || args.fd < 0) return EBADF;
  const int taken = takeRemoteFd(tgid, args.fd);
  if (taken < 0) return taken == -EBADF ? EBADF : EPERM;
  MemoryIdentity identity;
  bool deviceFile = false;
  const bool same = ctx_.memories->identityOf(taken, identity, deviceFile) && identity == memory->identity();
  const int status = fcntl(taken, F_GETFL);
  ::close(taken);
  if (!same || status < 0) return EINVAL;
  const bool readWrite = (status & O_ACCMODE) == O_RDWR;
  const bool readOnly = (status & O_ACCMODE) == O_RDONLY;
  if ((args.flags & DRM_RDWR) ? !readWrite : !readOnly) return EINVAL;
  int fdFlags = 0;
  if (remoteDescriptorFlags(tgid, args.fd, fdFlags) != 0) return EBADF;
  if (((fdFlags & O_CLOEXEC) != 0) != ((args.flags & DRM_CLOEXEC) != 0)) return EINVAL;
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return ENOENT;  // closed meanwhile
  f.prime[memory->identity()] = args.handle;
  argOut(c, args);
  return 0;
}

// Taken from the caller's descriptor table (pidfd_getfd): a descriptor number means the
// caller's own descriptor and nothing else, so nobody imports what they do not hold.
int Device::primeFdToHandle(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<drm_prime_handle>(c);
  const pid_t tgid = threadGroupOf(c.pid);
  if (tgid <= 0 || args.fd < 0) return EBADF;
  const int taken = takeRemoteFd(tgid, args.fd);
  if (taken < 0) return taken == -EBADF ? EBADF : EPERM;
  MemoryIdentity identity;
  bool deviceFile = false;
  if (!ctx_.memories->identityOf(taken, identity, deviceFile)) {
    ::close(taken);
    return EBADF;
  }
  {
    std::lock_guard lock(mutex_);
    if (auto it = f.prime.find(identity); it != f.prime.end()) {
      ::close(taken);
      args.handle = it->second;
      argOut(c, args);
      return 0;
    }
  }
  std::shared_ptr<BufferMemory> memory = ctx_.memories->find(identity);
  int err = 0;
  if (!memory && deviceFile) {
    // A node's memory file positioned where no live BO is (freed, or never one).
    ::close(taken);
    return EINVAL;
  }
  if (!memory) {
    memory = BufferMemory::map(taken, err);
    if (memory) ctx_.memories->add(memory);
  }
  ::close(taken);
  if (!memory) return err;
  auto bo = std::make_shared<BufferObject>();
  bo->size = memory->size();
  bo->memory = std::move(memory);
  std::lock_guard lock(mutex_);
  if (auto it = f.prime.find(identity); it != f.prime.end()) {
    args.handle = it->second;  // another thread of the caller imported it meanwhile
  } else {
    args.handle = addHandle(f, bo);
    if (args.handle == 0) return ENOSPC;
    f.prime[identity] = args.handle;
  }
  argOut(c, args);
  return 0;
}

// ---- Slices, EXECUTE and WAIT -------------------------------------------------------------------

int Device::attachSlice(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_attach_slice>(c);
  const auto& h = args.hdr;
  if (h.count == 0 || h.count > kMaxEntries || h.dbc_id >= config_.dbcs || args.data == 0 ||
      (h.dir != QAIC_DIR_TO_DEVICE && h.dir != QAIC_DIR_FROM_DEVICE))
    return EINVAL;
  std::vector<qaic_attach_slice_entry> entries(h.count);
  if (UserMemory(c.pid).read(args.data, entries.data(), entries.size() * sizeof entries[0])) return EFAULT;
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(h.handle);
  if (it == f.bos.end()) return ENOENT;
  BufferObject& bo = *it->second;
  if (bo.sliced || h.size > bo.size) return EINVAL;
  auto act = f.activations.find(h.dbc_id);
  if (act == f.activations.end()) return EINVAL;  // the DBC must be this file's
  uint64_t total = 0;
  for (const auto& e : entries) {
    if (!semValid(e.sem0) || !semValid(e.sem1) || !semValid(e.sem2) || !semValid(e.sem3)) return EINVAL;
    if (e.db_len != 0 && e.db_len != 8 && e.db_len != 16 && e.db_len != 32) return EINVAL;
    if (e.offset > bo.size || e.size > bo.size - e.offset) return EINVAL;
    total += e.size;
  }
  if (total > h.size) return EINVAL;
  // Mainline refuses a BO whose requests (one per slice here) could never fit the DBC's ring.
  if (entries.size() > act->second->nelem) return ENOSPC;
  bo.sliced = true;
  bo.dbcId = h.dbc_id;
  bo.dir = h.dir;
  bo.sliceHandle = h.handle;
  bo.slices = std::move(entries);
  bo.state = BufferObject::State::Idle;
  act->second->slicedBos[h.handle] = it->second;
  return 0;
}

int Device::execute(OpenFile& f, const IoctlCall& c, bool partial) {
  const auto entered = Clock::now();
  auto args = argIn<qaic_execute>(c);
  // Mainline's order: the count, the entries copied in (EFAULT, a null pointer too), then the
  // DBC's range (EINVAL) and its owner (EPERM).
  if (args.hdr.count == 0 || args.hdr.count > kMaxEntries) return EINVAL;
  const std::size_t entrySize = partial ? sizeof(qaic_partial_execute_entry) : sizeof(qaic_execute_entry);
  std::vector<qaic_partial_execute_entry> entries(args.hdr.count);
  {
    std::vector<std::byte> raw(entrySize * args.hdr.count);
    if (UserMemory(c.pid).read(args.data, raw.data(), raw.size())) return EFAULT;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (partial) {
        std::memcpy(&entries[i], raw.data() + i * entrySize, entrySize);
      } else {
        qaic_execute_entry e;
        std::memcpy(&e, raw.data() + i * entrySize, entrySize);
        entries[i] = {e.handle, e.dir, 0};
      }
    }
  }

  if (args.hdr.dbc_id >= config_.dbcs) return EINVAL;
  std::lock_guard lock(mutex_);
  auto actIt = f.activations.find(args.hdr.dbc_id);
  if (actIt == f.activations.end()) return EPERM;  // another file's DBC, or nobody's
  Activation& act = *actIt->second;
  std::vector<std::shared_ptr<BufferObject>> bos;
  uint32_t needed = 0;
  for (const auto& e : entries) {
    auto it = f.bos.find(e.handle);
    if (it == f.bos.end()) return ENOENT;
    auto& bo = it->second;
    if (!bo->sliced || bo->dbcId != args.hdr.dbc_id || bo->dir != e.dir) return EINVAL;
    if (partial && e.resize > bo->size) return EINVAL;
    if (bo->state == BufferObject::State::Queued) return EINVAL;  // mainline's; DETACH says EBUSY
    for (const auto& other : bos)
      if (other == bo) return EINVAL;  // the same BO twice in one submission
    needed += static_cast<uint32_t>(bo->slices.size());
    bos.push_back(bo);
  }
  const uint32_t n = act.nelem;
  const uint32_t head = loadReg(act, driver::kRegRequestHead) % n;
  const uint32_t tail = loadReg(act, driver::kRegRequestTail);
  if (tail >= n) return EINVAL;  // the ring's owner corrupted its tail register
  const uint32_t used = driver::ringUsed(head, tail, n);
  if (driver::ringFree(head, tail, n) < needed) return EAGAIN;

  uint32_t slot = tail;
  uint32_t ringUsedBefore = 0;  // elements this call queued ahead of the current BO
  for (std::size_t b = 0; b < bos.size(); ++b) {
    BufferObject& bo = *bos[b];
    const uint64_t limit = partial && entries[b].resize != 0 ? entries[b].resize : bo.size;
    const uint16_t reqId = act.nextKernelReqId++;
    for (std::size_t s = 0; s < bo.slices.size(); ++s) {
      const auto& sl = bo.slices[s];
      const bool last = s + 1 == bo.slices.size();
      // A partial execute moves only the bytes below `resize`; slices above it keep their
      // semaphores and doorbell but transfer nothing.
      uint64_t len = sl.size;
      if (sl.offset >= limit)
        len = 0;
      else if (sl.offset + len > limit)
        len = limit - sl.offset;
      RequestElement e{};
      e.reqId = reqId;
      e.cmd = bo.dir == QAIC_DIR_TO_DEVICE ? driver::kReqCmdToDevice : driver::kReqCmdFromDevice;
      if (last) e.cmd |= driver::kReqCmdCompletion;
      const uint64_t iova = driver::makeIova(bo.sliceHandle, static_cast<uint32_t>(sl.offset));
      e.srcAddr = bo.dir == QAIC_DIR_TO_DEVICE ? iova : sl.dev_addr;
      e.dstAddr = bo.dir == QAIC_DIR_TO_DEVICE ? sl.dev_addr : iova;
      e.length = static_cast<uint32_t>(len);
      e.dbAddr = sl.db_addr;
      e.dbLen = static_cast<uint8_t>(sl.db_len);
      e.dbData = sl.db_data;
      const qaic_sem* sems[4] = {&sl.sem0, &sl.sem1, &sl.sem2, &sl.sem3};
      for (int i = 0; i < 4; ++i) {
        // A presync semaphore belongs on every segment; postsync ones only on the last.
        if (sems[i]->presync || last) e.semCmd[i] = driver::encodeSem(*sems[i]);
      }
      std::memcpy(act.requestFifo() + std::size_t{slot} * sizeof e, &e, sizeof e);
      if (last) act.kernelSlots[slot] = bos[b];
      slot = (slot + 1) % n;
    }
    bo.state = BufferObject::State::Queued;
    bo.completionCode = 0;
    bo.queueLevelBefore = used + ringUsedBefore;
    ringUsedBefore += static_cast<uint32_t>(bo.slices.size());
    bo.queuedElements = static_cast<uint32_t>(bo.slices.size());
    bo.ioctlEntry = entered;
    bo.submitted = Clock::now();
  }
  std::atomic_ref<uint32_t>(*act.reg(driver::kRegRequestTail)).store(slot, std::memory_order_release);
  driver::futexBumpAndWakeAll(act.reg(driver::kRegDoorbellFutex));
  return 0;
}

int Device::executeBo(OpenFile& f, const IoctlCall& c) { return execute(f, c, false); }
int Device::partialExecuteBo(OpenFile& f, const IoctlCall& c) { return execute(f, c, true); }

int Device::waitBo(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_wait>(c);
  if (args.pad != 0 || args.dbc_id >= config_.dbcs) return EINVAL;
  // Timeout 0 waits the wait_exec_default_timeout_ms module parameter, as mainline does.
  const auto timeout = args.timeout == 0 ? ctx_.parameters->waitExecDefaultTimeout()
                                         : std::chrono::milliseconds(args.timeout);
  Lock lock(mutex_);
  auto act = f.activations.find(args.dbc_id);
  if (act == f.activations.end()) return EPERM;  // another file's DBC, or nobody's
  const Activation* owner = act->second.get();
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return ENOENT;
  auto bo = it->second;
  if (bo->dbcId != args.dbc_id || !bo->sliced) return EINVAL;
  const bool finished = boChanged_.wait_for(
      lock, timeout, [&] { return bo->state != BufferObject::State::Queued || removed_.load() || stopped_; });
  if (!finished) return ETIMEDOUT;
  if (bo->state == BufferObject::State::Queued) return ENODEV;
  // The activation ended meanwhile (a reset, an error, a deactivation): the DBC is no longer
  // this file's, and mainline's waiter gets EPERM however the request ended.
  if (auto now = f.activations.find(args.dbc_id); now == f.activations.end() || now->second.get() != owner)
    return EPERM;
  if (bo->state == BufferObject::State::Idle) return EINVAL;  // never submitted
  return bo->completionCode == 0 ? 0 : EIO;
}

int Device::perfStats(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_perf_stats>(c);
  // As mainline: only the DBC's range is checked (not its owner, nor the header's pad); a count
  // of 0 reads and writes nothing and succeeds.
  if (args.hdr.dbc_id >= config_.dbcs) return EINVAL;
  std::vector<qaic_perf_stats_entry> entries(args.hdr.count);
  if (entries.empty()) return 0;
  UserMemory mem(c.pid);
  if (mem.read(args.data, entries.data(), entries.size() * sizeof entries[0])) return EFAULT;
  {
    std::lock_guard lock(mutex_);
    auto us = [](Clock::duration d) {
      return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
    };
    for (auto& e : entries) {
      auto it = f.bos.find(e.handle);
      if (it == f.bos.end()) return ENOENT;
      // Any BO of the file, sliced or not, on any DBC: what it has not done reads as 0.
      const BufferObject& bo = *it->second;
      e.queue_level_before = bo.queueLevelBefore;
      e.num_queue_element = bo.queuedElements;
      e.submit_latency_us = bo.state == BufferObject::State::Idle ? 0 : us(bo.submitted - bo.ioctlEntry);
      e.device_latency_us = bo.state == BufferObject::State::Done ? us(bo.completed - bo.submitted) : 0;
    }
  }
  return mem.write(args.data, entries.data(), entries.size() * sizeof entries[0]) ? EFAULT : 0;
}

int Device::detachSlice(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_detach_slice>(c);
  if (args.pad != 0) return EINVAL;
  std::lock_guard lock(mutex_);
  auto it = f.bos.find(args.handle);
  if (it == f.bos.end()) return ENOENT;
  BufferObject& bo = *it->second;
  if (!bo.sliced) return EINVAL;
  if (bo.state == BufferObject::State::Queued) return EBUSY;
  if (auto act = f.activations.find(bo.dbcId); act != f.activations.end()) act->second->slicedBos.erase(bo.sliceHandle);
  bo.sliced = false;
  bo.slices.clear();
  bo.state = BufferObject::State::Idle;
  return 0;
}

int Device::dbcInfo(OpenFile& f, const IoctlCall& c) {
  auto args = argIn<qaic_emu_dbc_info>(c);
  if (args.pad != 0 || args.dbc_id >= config_.dbcs) return EINVAL;
  std::lock_guard lock(mutex_);
  auto it = f.activations.find(args.dbc_id);
  if (it == f.activations.end()) return EPERM;
  const Activation& act = *it->second;
  args.generation = act.generation;
  args.nelem = act.nelem;
  args.window_size = driver::dbcWindowBytes(act.nelem);
  args.request_offset = driver::requestFifoOffset(act.nelem);
  args.response_offset = driver::responseFifoOffset(act.nelem);
  std::memset(args.name, 0, sizeof args.name);
  const std::string& path = act.window->path();
  const std::string name = path.substr(path.find_last_of('/') + 1);
  std::memcpy(args.name, name.data(), std::min(name.size(), sizeof args.name - 1));
  argOut(c, args);
  return 0;
}

// ---- What a channel asks while it moves a request (ChannelHost) ---------------------------------

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

}  // namespace qaic::emu
