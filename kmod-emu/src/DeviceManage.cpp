// SPDX-License-Identifier: Apache-2.0
// MANAGE: the control messages a driver relays to the device's firmware. Transactions run in
// order; the answers are written over the caller's message buffer as the mainline driver does.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "Device.hpp"
#include "FreedMemory.hpp"
#include "Log.hpp"
#include "UserMemory.hpp"
#include "container/ResourceNeeds.hpp"

namespace qaic::emu {
namespace {

template <typename T>
T readAt(const std::vector<std::byte>& msg, std::size_t offset) {
  T v;
  std::memcpy(&v, msg.data() + offset, sizeof v);
  return v;
}
template <typename T>
void append(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

// True when `fd` (in this process) is an eventfd.
bool isEventfd(int fd) {
  char link[64];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:[eventfd]") == 0;
}

}  // namespace

int Device::manageIoctl(OpenFile& f, const IoctlCall& c) {
  const int err = manage(f, c);
  stopRemovedPartitions();
  return err;
}

int Device::manage(OpenFile& f, const IoctlCall& c) {
  qaic_manage_msg args;
  std::memcpy(&args, c.in, sizeof args);
  if (args.len == 0 || args.len > QAIC_MANAGE_MAX_MSG_LENGTH || args.count == 0 || args.data == 0) return EINVAL;
  std::vector<std::byte> msg(args.len);
  UserMemory mem(c.pid);
  if (mem.read(args.data, msg.data(), msg.size())) return EFAULT;

  // Check the framing of every transaction before running any.
  std::vector<ManageTransaction> trans;
  for (std::size_t off = 0; off < msg.size();) {
    if (msg.size() - off < sizeof(qaic_manage_trans_hdr)) return EINVAL;
    auto hdr = readAt<qaic_manage_trans_hdr>(msg, off);
    if (hdr.len < sizeof hdr || hdr.len > msg.size() - off) return EINVAL;
    trans.push_back({off, hdr});
    off += hdr.len;
  }
  if (trans.size() != args.count) return EINVAL;

  // The driver waits control_resp_timeout_s for the firmware's answer to the whole message.
  const auto deadline = Clock::now() + ctx_.parameters->controlResponseTimeout();
  if (int err = waitForFirmware(deadline)) return err;

  ManageAnswer reply;
  std::vector<std::byte>& answer = reply.bytes;
  uint32_t& answers = reply.count;
  std::vector<uint32_t>& activatedHere = reply.activated;
  auto fail = [&](int err) {
    for (uint32_t dbc : activatedHere) deactivate(f, dbc);
    return err;
  };
  for (std::size_t index = 0; index < trans.size(); ++index) {
    const auto [off, hdr] = trans[index];
    // A message the firmware took longer than the driver waits for is lost to the caller.
    if (Clock::now() > deadline) return fail(ETIMEDOUT);
    switch (hdr.type) {
      case QAIC_TRANS_PASSTHROUGH_FROM_USR: {
        // The payload's magic says which firmware command it is.
        const std::size_t payload = hdr.len - sizeof(qaic_manage_trans_hdr);
        // Mainline's transport passes only whole 8-byte words through.
        if (payload < sizeof(uint32_t) || hdr.len % 8 != 0) return fail(EINVAL);
        const auto magic = readAt<uint32_t>(msg, off + sizeof hdr);
        // The vendor's commands start with a small command number where ours have a magic.
        if (magic < driver::vendor::kCommandTypeLimit) {
          std::size_t used = 0;
          if (int err = vendorCommand(f, msg, std::span(trans).subspan(index), c.pid, reply, used)) return fail(err);
          index += used;
          break;
        }
        if (magic == driver::kPeerGroupMagic) {
          if (int err = peerActivate(f, msg, trans, index, c.pid, reply)) return fail(err);
          ++index;  // its ACTIVATE
          break;
        }
        if (magic == driver::kDeviceStatusMagic) {
          if (payload != sizeof(driver::DeviceStatusRequest)) return fail(EINVAL);
          auto req = readAt<driver::DeviceStatusRequest>(msg, off + sizeof hdr);
          if (req.version != driver::kDeviceStatusVersion) return fail(EINVAL);
          const driver::DeviceStatusResponse resp = statusReport(f.partition.get());
          append(answer, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, hdr.len});
          append(answer, resp);
          ++answers;
          break;
        }
        if (magic == driver::kPartitionMagic) {
          if (payload != sizeof(driver::PartitionRequest)) return fail(EINVAL);
          auto req = readAt<driver::PartitionRequest>(msg, off + sizeof hdr);
          driver::PartitionResponse resp{};
          if (int err = partitionCommand(f, req, resp)) return fail(err);
          append(answer, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, hdr.len});
          append(answer, resp);
          ++answers;
          break;
        }
        if (payload != sizeof(driver::ResourceGroupRequest)) return fail(EINVAL);
        auto req = readAt<driver::ResourceGroupRequest>(msg, off + sizeof hdr);
        driver::ResourceGroupResponse resp{};
        if (int err = resourceGroup(f, req, resp)) return fail(err);
        append(answer, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, hdr.len});
        append(answer, resp);
        ++answers;
        break;
      }
      case QAIC_TRANS_DMA_XFER_FROM_USR:
      case QAIC_TRANS_DMA_XFER_CONT: {
        if (hdr.len != sizeof(qaic_manage_trans_dma_xfer)) return fail(EINVAL);
        auto t = readAt<qaic_manage_trans_dma_xfer>(msg, off);
        if (int err = dmaTransfer(f, t, hdr.type == QAIC_TRANS_DMA_XFER_CONT, c.pid)) return fail(err);
        break;
      }
      case QAIC_TRANS_ACTIVATE_FROM_USR: {
        if (hdr.len != sizeof(qaic_manage_trans_activate_to_dev)) return fail(EINVAL);
        auto t = readAt<qaic_manage_trans_activate_to_dev>(msg, off);
        uint32_t dbc = 0;
        if (int err = activate(f, t, c.pid, dbc)) return fail(err);
        activatedHere.push_back(dbc);
        qaic_manage_trans_activate_from_dev resp{};
        resp.hdr = {QAIC_TRANS_ACTIVATE_FROM_DEV, sizeof resp};
        resp.status = 0;
        resp.dbc_id = dbc;
        resp.options = t.options;
        append(answer, resp);
        ++answers;
        break;
      }
      case QAIC_TRANS_DEACTIVATE_FROM_USR: {
        if (hdr.len != sizeof(qaic_manage_trans_deactivate)) return fail(EINVAL);
        auto t = readAt<qaic_manage_trans_deactivate>(msg, off);
        if (t.pad != 0) return fail(EINVAL);
        if (int err = deactivate(f, t.dbc_id)) return fail(err);
        std::erase(activatedHere, t.dbc_id);
        qaic_manage_trans_deactivate resp{{QAIC_TRANS_DEACTIVATE_FROM_DEV, sizeof resp}, t.dbc_id, 0};
        append(answer, resp);
        ++answers;
        break;
      }
      case QAIC_TRANS_STATUS_FROM_USR: {
        if (hdr.len != sizeof(qaic_manage_trans_status_to_dev)) return fail(EINVAL);
        qaic_manage_trans_status_from_dev resp{};
        resp.hdr = {QAIC_TRANS_STATUS_TO_USR, sizeof resp};
        resp.major = QAIC_PROTOCOL_MAJOR;
        resp.minor = QAIC_PROTOCOL_MINOR_MAX;
        resp.status = 0;
        resp.status_flags = 0;
        append(answer, resp);
        ++answers;
        break;
      }
      default:
        // Device-side types and TERMINATE (closing the file does that) are not user requests.
        return fail(EINVAL);
    }
  }
  if (Clock::now() > deadline) return fail(ETIMEDOUT);
  if (answer.size() > QAIC_MANAGE_MAX_MSG_LENGTH) return fail(EINVAL);
  if (!answer.empty() && mem.write(args.data, answer.data(), answer.size())) return fail(EFAULT);
  args.len = static_cast<uint32_t>(answer.size());
  args.count = answers;
  std::memcpy(c.out, &args, sizeof args);
  return 0;
}

int Device::peerActivate(OpenFile& f, const std::vector<std::byte>& msg, const std::vector<ManageTransaction>& trans,
                         std::size_t index, pid_t pid, ManageAnswer& answer) {
  const auto [off, hdr] = trans[index];
  if (hdr.len != sizeof hdr + sizeof(driver::PeerGroupRequest)) return EINVAL;
  const auto req = readAt<driver::PeerGroupRequest>(msg, off + sizeof hdr);
  if (req.version != driver::kPeerGroupVersion) return EINVAL;
  if (std::any_of(std::begin(req.padding), std::end(req.padding), [](uint8_t b) { return b != 0; })) return EINVAL;
  // The membership qualifies the activation right after it, and nothing else.
  if (index + 1 >= trans.size()) return EINVAL;
  const auto [activateOff, activateHdr] = trans[index + 1];
  if (activateHdr.type != QAIC_TRANS_ACTIVATE_FROM_USR || activateHdr.len != sizeof(qaic_manage_trans_activate_to_dev))
    return EINVAL;
  const auto t = readAt<qaic_manage_trans_activate_to_dev>(msg, activateOff);
  const PeerJoin join{req.token, req.part, req.parts};
  PeerGroups::Refusal refusal;
  uint32_t dbc = 0;
  if (int err = activate(f, t, pid, dbc, &join, &refusal)) return err;
  driver::PeerGroupResponse resp{};
  resp.magic = driver::kPeerGroupMagic;
  resp.version = driver::kPeerGroupVersion;
  resp.status = -refusal.error;
  resp.part = req.part;
  resp.token = req.token;
  std::snprintf(resp.message, sizeof resp.message, "%s", refusal.message.c_str());
  append(answer.bytes, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, hdr.len});
  append(answer.bytes, resp);
  ++answer.count;
  qaic_manage_trans_activate_from_dev activated{};
  activated.hdr = {QAIC_TRANS_ACTIVATE_FROM_DEV, sizeof activated};
  activated.status = static_cast<uint32_t>(refusal.error);
  activated.dbc_id = refusal.error == 0 ? dbc : 0;
  activated.options = t.options;
  append(answer.bytes, activated);
  ++answer.count;
  if (refusal.error == 0) answer.activated.push_back(dbc);
  return 0;
}

int Device::waitForFirmware(Clock::time_point deadline) {
  Lock lock(mutex_);
  faultChanged_.wait_until(lock, deadline, [&] { return !controlHang_.load() || removed_.load() || stopped_; });
  if (removed_.load() || stopped_) return ENODEV;
  return controlHang_.load() ? ETIMEDOUT : 0;
}

int Device::resourceGroup(OpenFile& f, const driver::ResourceGroupRequest& req, driver::ResourceGroupResponse& resp) {
  if (req.magic != driver::kResourceGroupMagic || req.version != driver::kResourceGroupVersion) return EINVAL;
  resp.magic = driver::kResourceGroupMagic;
  resp.version = driver::kResourceGroupVersion;
  std::lock_guard lock(mutex_);
  rt::Resources& pool = *f.pool(free_);
  switch (static_cast<driver::ResourceGroupOp>(req.op)) {
    case driver::ResourceGroupOp::Reserve:
    case driver::ResourceGroupOp::ReserveNamed: {
      if (req.groupId != 0) return EINVAL;
      const rt::Resources want = req.resources;
      if (!pool.covers(want)) {
        rt::Resources withoutDdr = want;
        withoutDdr.ddrSize = 0;
        // Short of device memory alone is ENOMEM, as an activation's refusal is.
        const bool memoryAlone = pool.covers(withoutDdr);
        resp.status = memoryAlone ? -ENOMEM : -ENOSPC;
        if (memoryAlone)
          logError("accel" + std::to_string(index_) + ": resource group of " +
                   container::deviceMemoryText(want.ddrSize) + " of device memory refused; " +
                   container::deviceMemoryText(pool.ddrSize) + " of " +
                   container::deviceMemoryText(f.partition ? f.partition->capacity.ddrSize : total_.ddrSize) +
                   " free: ENOMEM");
        return 0;
      }
      pool -= want;
      ResourceGroup g{nextGroupId_++, want, want,
                      static_cast<driver::ResourceGroupOp>(req.op) == driver::ResourceGroupOp::ReserveNamed};
      f.groups[g.id] = g;
      resp.groupId = g.id;
      resp.resources = want;
      return 0;
    }
    case driver::ResourceGroupOp::Release:
    case driver::ResourceGroupOp::Query: {
      auto it = f.groups.find(req.groupId);
      if (it == f.groups.end()) {
        resp.status = -ENOENT;
        return 0;
      }
      resp.groupId = req.groupId;
      if (static_cast<driver::ResourceGroupOp>(req.op) == driver::ResourceGroupOp::Query) {
        resp.resources = it->second.capacity;
        return 0;
      }
      if (!(it->second.free == it->second.capacity)) {
        resp.status = -EBUSY;  // activations still draw from it
        return 0;
      }
      pool += it->second.capacity;
      f.groups.erase(it);
      return 0;
    }
  }
  return EINVAL;
}

namespace {

// The first resource `have` lacks for `want`, in the order the request names them.
driver::PartitionResource shortOf(const rt::Resources& have, const rt::Resources& want) {
  using R = driver::PartitionResource;
  if (have.numNsp < want.numNsp) return R::Nsp;
  if (have.numMcid < want.numMcid) return R::Mcid;
  if (have.numSem < want.numSem) return R::Sem;
  if (have.numVc < want.numVc) return R::Vc;
  if (have.ddrSize < want.ddrSize) return R::Ddr;
  return R::None;
}

bool printableLabel(const char (&label)[32]) {
  const std::size_t len = strnlen(label, sizeof label);
  if (len == sizeof label) return false;  // not NUL-terminated
  for (std::size_t i = 0; i < len; ++i)
    if (label[i] < 0x20 || label[i] > 0x7e) return false;
  return true;
}

}  // namespace

int Device::partitionCommand(OpenFile& f, const driver::PartitionRequest& req, driver::PartitionResponse& resp) {
  if (req.magic != driver::kPartitionMagic || req.version != driver::kPartitionVersion) return EINVAL;
  resp.magic = driver::kPartitionMagic;
  resp.version = driver::kPartitionVersion;
  // Carving up a device is the administrator's (qaicd's) business, as CAP_SYS_ADMIN would be.
  if (f.uid != 0 && f.uid != geteuid()) {
    resp.status = -EPERM;
    return 0;
  }
  if (f.partition) return EINVAL;  // a partition is not partitioned again
  std::lock_guard lock(mutex_);
  switch (static_cast<driver::PartitionOp>(req.op)) {
    case driver::PartitionOp::Create: {
      if (req.partitionId != 0 || (req.mode & ~0777u) != 0 || req.holderPid < 0 || !printableLabel(req.label))
        return EINVAL;
      const rt::Resources want = req.resources;
      if (want.numVc == 0 || want.numNsp == 0) return EINVAL;  // nothing could ever run in it
      if (status_ != Status::Ready) return EAGAIN;
      if (const auto lacking = shortOf(free_, want); lacking != driver::PartitionResource::None) {
        resp.status = -ENOSPC;
        resp.shortResource = static_cast<uint32_t>(lacking);
        return 0;
      }
      auto p = std::make_shared<Partition>();
      p->id = ctx_.partitionNodes ? ctx_.partitionNodes->allocatePartitionId() : localPartitionId_++;
      p->capacity = want;
      p->free = want;
      p->ownerUid = req.ownerUid;
      p->ownerGid = req.ownerGid;
      p->mode = req.mode;
      p->holderPid = req.holderPid;
      p->label = req.label;
      free_ -= want;
      partitions_[p->id] = p;
      if (ctx_.partitionNodes) ctx_.partitionNodes->publishPartition(index_, p->id, pciAddress());
      resp.partitionId = p->id;
      resp.resources = want;
      logInfo("accel" + std::to_string(index_) + ": partition " + std::to_string(p->id) + " created (" +
              std::to_string(want.numNsp) + " NSPs, owner " + std::to_string(req.ownerUid) + ", holder " +
              std::to_string(req.holderPid) + ")");
      return 0;
    }
    case driver::PartitionOp::Remove: {
      auto it = partitions_.find(req.partitionId);
      if (it == partitions_.end()) {
        resp.status = -ENOENT;
        return 0;
      }
      std::shared_ptr<Partition> p = it->second;
      partitions_.erase(it);
      p->ended = true;
      free_ += p->capacity;
      if (ctx_.partitionNodes) ctx_.partitionNodes->withdrawPartition(p->id);
      resp.partitionId = p->id;
      // Its activations stop outside the mutex; their charges return to the ended partition.
      removedPartitions_.push_back(std::move(p));
      return 0;
    }
  }
  return EINVAL;
}

int Device::dmaTransfer(OpenFile& f, const qaic_manage_trans_dma_xfer& t, bool continuation, pid_t pid) {
  if (t.pad != 0 || t.tag == 0 || t.tag > driver::kLoadIdMask) return EINVAL;
  {
    std::lock_guard lock(mutex_);
    auto it = f.loads.find(t.tag);
    if (t.size == 0) {
      if (continuation || it == f.loads.end()) return EINVAL;
      f.loads.erase(it);
      return 0;
    }
    if (continuation && it == f.loads.end()) return EINVAL;
    if (it != f.loads.end() && it->second.sealed) return EBUSY;
    const uint64_t have = it == f.loads.end() ? 0 : it->second.bytes->size();
    if (t.size > UINT64_MAX - have || have + t.size > total_.ddrSize) return ENOMEM;
  }
  // Read outside the mutex: large containers take a while. The bytes go into a memory file
  // (LoadBuffer), sized at once but given pages only as non-zero bytes are actually read, so a
  // claim of gigabytes backed by one readable page costs a page, and the constants are shared
  // memory, not heap. The first transfer of a load becomes the load's buffer itself, so a
  // container is held once, not twice.
  if (t.addr > UINT64_MAX - t.size) return EFAULT;
  auto chunk = std::make_shared<LoadBuffer>();
  if (int err = chunk->appendFrom(UserMemory(pid), t.addr, t.size)) return err;
  std::lock_guard lock(mutex_);
  auto& load = f.loads[t.tag];
  if (load.sealed) return EBUSY;
  if (!load.bytes || load.bytes->empty()) {
    load.bytes = std::move(chunk);
    return 0;
  }
  if (load.bytes.use_count() == 1) {
    // Only this load holds the bytes: grow them (the mapping may move). What an earlier, failed
    // ACTIVATE cached on them (the validated image, packed constants) points into the old mapping.
    load.bytes->programState.reset();
    return load.bytes->appendCopy({chunk->data(), chunk->size()});
  }
  // An ACTIVATE is building a program from these bytes outside the mutex: leave them as they are
  // and give the load a grown copy.
  auto grown = std::make_shared<LoadBuffer>();
  if (int err = grown->appendCopy({load.bytes->data(), load.bytes->size()})) return err;
  if (int err = grown->appendCopy({chunk->data(), chunk->size()})) return err;
  load.bytes = std::move(grown);
  return 0;
}

int Device::activate(OpenFile& f, const qaic_manage_trans_activate_to_dev& t, pid_t pid, uint32_t& dbcId,
                     const PeerJoin* peer, PeerGroups::Refusal* refusal) {
  const uint32_t namedGroup = driver::activateResourceGroup(t);
  const uint32_t nelem = t.queue_size == 0 ? driver::kDefaultQueueSize : t.queue_size;
  if (nelem < driver::kMinQueueSize || nelem > driver::kMaxQueueSize) return EINVAL;
  const uint32_t loadId = driver::activateLoadId(t.options);
  LoadBytes bytes;
  {
    std::lock_guard lock(mutex_);
    auto it = f.loads.find(loadId);
    if (it == f.loads.end()) return EINVAL;
    bytes = it->second.bytes;
    // Building the program and its IO region costs memory and time: a device (or group) without
    // a free DBC and NSP for any activation at all refuses first, so a client asking for
    // thousands of activations is refused as cheaply as the first one past the limit.
    rt::Resources least;
    least.numNsp = 1;
    least.numVc = 1;
    rt::Resources* pool = nullptr;
    uint32_t groupId = 0;
    if (int err = drawPoolLocked(f, namedGroup, least, pool, groupId)) return err;
    if (firstFreeDbcLocked() == dbcs_.size()) return ENOSPC;
  }
  // Built here, on the FUSE worker serving the ACTIVATE: the program is tied to no thread, and
  // a hung NSP (another activation's run) cannot hold up an activation.
  const uint32_t programIndex = driver::activateProgramIndex(t.options);
  std::string error;
  auto act = std::make_shared<Activation>();
  if (peer) {
    // Joined first: a part the group refuses costs no program build. Until the activation is
    // made, leaving (any failure below) gives the part back without breaking the group.
    act->peer = ctx_.peerGroups->join(peer->token, peer->part, peer->parts, index_, config_.p2pPeers, *refusal);
    if (!act->peer) {
      logError("accel" + std::to_string(index_) + ": activate load " + std::to_string(loadId) +
               " refused: " + refusal->message);
      return 0;
    }
  }
  act->program = ctx_.loader(bytes, programIndex, error);
  if (!act->program) {
    logError("accel" + std::to_string(index_) + ": activate load " + std::to_string(loadId) + ": " + error);
    return EINVAL;
  }
  if (act->peer)
    act->program->setPeers(
        std::make_shared<ComputeYieldingExchange>(act->peer->exchange(), &act->runCores, &act->stopping));
  // Refuse before allocating: an activation whose device memory (its IO region and retained
  // state, and its load's constants unless another activation holds them) does not fit what it
  // draws from is refused here, and checked again under the mutex when it is charged. The region
  // is allocated before the program is attached, since the program's kernels are created with
  // the addresses of the buffers they read and write in place.
  {
    std::lock_guard lock(mutex_);
    auto it = f.loads.find(loadId);
    if (it == f.loads.end() || it->second.bytes != bytes) return EINVAL;  // released meanwhile
    const rt::Resources need = activationCharge(act->program->needs(), *it->second.constants);
    rt::Resources* pool = nullptr;
    uint32_t groupId = 0;
    if (int err = drawPoolLocked(f, namedGroup, need, pool, groupId)) return err;
    if (pool->ddrSize < need.ddrSize)
      return refuseForMemory(loadId, act->program->needs(), need.ddrSize, pool->ddrSize,
                             poolCapacityLocked(f, groupId));
  }
  try {
    act->ioRegion.resize(act->program->needs().ioRegionSize);
    act->program->attach(act->ioRegion);
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::exception& e) {
    logError("accel" + std::to_string(index_) + ": activate load " + std::to_string(loadId) + ": " + e.what());
    return EINVAL;
  }
  const ProgramNeeds needs = act->program->needs();
  if (needs.doneSemaphore >= driver::kSemaphoresPerDbc) return EINVAL;
  act->nelem = nelem;
  act->loadId = loadId;
  act->owner = &f;
  act->load = bytes;
  if (t.eventfd != 0) {
    const pid_t tgid = threadGroupOf(pid);
    int fd = tgid > 0 ? takeRemoteFd(tgid, static_cast<int>(t.eventfd)) : -ESRCH;
    if (fd < 0) return fd == -EBADF ? EBADF : (fd == -EPERM ? EPERM : EINVAL);
    act->eventfd = fd;
    if (!isEventfd(fd)) return EINVAL;  // the Activation closes fd
  }
  std::lock_guard lock(mutex_);
  if (removed_.load() || stopped_) return ENODEV;
  if (status_ != Status::Ready) return EAGAIN;
  auto it = f.loads.find(loadId);
  if (it == f.loads.end() || it->second.bytes != bytes) return EINVAL;  // released meanwhile
  if (f.partition && f.partition->ended) return ENODEV;
  ResidentConstants& constants = *it->second.constants;
  const rt::Resources need = activationCharge(needs, constants);
  uint32_t groupId = 0;
  rt::Resources* pool = nullptr;
  if (int err = drawPoolLocked(f, namedGroup, need, pool, groupId)) return err;
  if (pool->ddrSize < need.ddrSize)
    return refuseForMemory(loadId, needs, need.ddrSize, pool->ddrSize, poolCapacityLocked(f, groupId));
  const uint32_t id = firstFreeDbcLocked();
  if (id == dbcs_.size()) return ENOSPC;

  const uint32_t generation = ++dbcGeneration_[id];
  const std::string name = "dbc" + std::to_string(index_) + "-" + std::to_string(id) + "-" + std::to_string(generation);
  int err = 0;
  act->window = ctx_.shm->createFile(name, driver::dbcWindowBytes(nelem), f.uid, f.gid, err);
  if (!act->window) return err == ENOSPC ? ENOMEM : err;
  *pool -= need;
  act->charged = need;
  act->groupId = groupId;
  if (constants.activations++ == 0) {
    // The first activation brought the constants: the load holds them from now on.
    act->charged.ddrSize -= needs.constantsBytes;
    constants.bytes = needs.constantsBytes;
    constants.groupId = groupId;
  }
  act->constants = it->second.constants;
  act->dbcId = id;
  act->generation = generation;
  it->second.sealed = true;
  dbcs_[id] = act;
  dbcState_[id] = DbcState::Assigned;
  f.activations[id] = act;
  if (act->peer) act->peer->activated();
  startChannel(*act, *this);
  dbcId = id;
  logInfo("accel" + std::to_string(index_) + ": load " + std::to_string(loadId) + " activated on dbc " +
          std::to_string(id) + " (" + std::to_string(needs.charge.numNsp) + " NSPs)" +
          (act->peer ? ", part " + std::to_string(act->peer->part()) + " of " + std::to_string(act->peer->parts()) +
                           " of a peer group"
                     : std::string()));
  return 0;
}

rt::Resources Device::activationCharge(const ProgramNeeds& needs, const ResidentConstants& constants) {
  rt::Resources need = needs.charge;
  if (constants.activations > 0) need.ddrSize -= needs.constantsBytes;
  return need;
}

uint64_t Device::poolCapacityLocked(const OpenFile& f, uint32_t groupId) const {
  if (groupId != 0) {
    auto g = f.groups.find(groupId);
    if (g != f.groups.end()) return g->second.capacity.ddrSize;
  }
  return f.partition ? f.partition->capacity.ddrSize : total_.ddrSize;
}

int Device::refuseForMemory(uint32_t loadId, const ProgramNeeds& needs, uint64_t needBytes, uint64_t freeBytes,
                            uint64_t capacity) const {
  container::DeviceMemoryNeeds memory;
  memory.constants = needBytes - needs.ioRegionSize - needs.retainedStateBytes;  // 0 when resident
  memory.ioRegion = needs.ioRegionSize;
  memory.retainedState = needs.retainedStateBytes;
  memory.activations = 1;
  logError("accel" + std::to_string(index_) + ": activate load " + std::to_string(loadId) + ": program '" +
           needs.programName + "' needs " + container::describeDeviceMemory(memory) + "; " +
           container::deviceMemoryText(freeBytes) + " of " + container::deviceMemoryText(capacity) + " free: ENOMEM");
  return ENOMEM;
}

int Device::deactivate(OpenFile& f, uint32_t dbcId) {
  std::shared_ptr<Activation> act;
  {
    std::lock_guard lock(mutex_);
    if (dbcId >= dbcs_.size()) return EINVAL;
    act = detachActivation(f, dbcId);
  }
  if (!act) return EPERM;  // another file's DBC, or nobody's: mainline's disable_dbc()
  retire(*act, driver::DBC_COMPLETION_ABORTED, driver::DeviceStatus::Stopped);
  boChanged_.notify_all();
  act.reset();
  returnFreedMemoryToSystem();
  return 0;
}

}  // namespace qaic::emu
