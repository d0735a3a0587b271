// SPDX-License-Identifier: Apache-2.0
#include "driver/DeviceNode.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <xf86drm.h>

#include "base/InstanceLock.hpp"
#include "driver/Ptracer.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::driver {

Result<DeviceNode> DeviceNode::open(const DeviceRoot& root, unsigned index, int flags) {
  const std::string path = root.nodePath(index).string();
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return SysError{errno, "open " + path};
  drmVersionPtr version = drmGetVersion(fd.get());
  if (version == nullptr)
    return SysError{errno, "open " + path + ": not a qaic node (no DRM driver answers DRM_IOCTL_VERSION)"};
  const std::string driver(version->name, static_cast<std::size_t>(version->name_len));
  drmFreeVersion(version);
  if (driver != "qaic") return SysError{ENODEV, "open " + path + ": its driver is '" + driver + "', not qaic"};
  SysfsDevice sysfs(root, index);
  std::filesystem::path shmDir;
  UniqueFd instanceLock;
  if (auto dir = sysfs.read(driver::sysfs::kEmuShmDir)) {
    shmDir = *dir;
    // Without the declaration the emulator cannot read our ioctl arguments: fail here, clearly.
    if (auto traced = declareEmulatorPtracer(sysfs); !traced) return traced.sysError();
    // An emulator too old to mark its instance has none; its loss then shows only in ioctls.
    if (auto lock = openInstanceLock((shmDir / kInstanceLockName).string()))
      instanceLock = std::move(lock.value());
    else if (lock.error() != ENOENT)
      return SysError{lock.error(), "open " + path + ": " + lock.sysError().context};
  }
  DeviceNode node(std::move(fd), index, path, std::move(sysfs), std::move(shmDir), std::move(instanceLock));
  // The emulator may have died between our open and the lock's.
  if (auto present = node.checkPresent(); !present) return present.sysError();
  return node;
}

std::string DeviceNode::name() const { return "device " + std::to_string(index_) + " (" + path_ + ")"; }

Result<void> DeviceNode::checkPresent() const {
  if (!*instanceLock_) return {};
  auto held = instanceLockHeld(instanceLock_->get());
  if (!held) return SysError{held.error(), name() + ": " + held.sysError().context};
  if (!*held)
    return SysError{
        ENODEV, name() + " is gone: the qaic-emu serving it (shared memory " + shmDir_.string() + ") no longer runs"};
  return {};
}

Result<void> DeviceNode::rawIoctl(unsigned long request, void* argument, const char* name) const {
  int rc;
  do {
    rc = ::ioctl(fd(), request, argument);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return lastError(name);
  return {};
}

Result<void> DeviceNode::drmCall(unsigned long request, void* argument, const char* name) const {
  if (drmIoctl(fd(), request, argument) != 0) return lastError(name);
  return {};
}

// MANAGE, EXECUTE_BO and PARTIAL_EXECUTE_BO answer EAGAIN (a device initializing, a full ring):
// they go through rawIoctl, so that the caller's own bounded retry decides, never libdrm's spin.
Result<void> DeviceNode::manage(ManageBuffer& buffer) const {
  qaic_manage_msg msg{};
  msg.len = buffer.len;
  msg.count = buffer.count;
  msg.data = reinterpret_cast<uintptr_t>(buffer.data());
  if (auto r = rawIoctl(DRM_IOCTL_QAIC_MANAGE, &msg, "MANAGE"); !r) return r;
  if (msg.len > buffer.bytes.size()) return SysError{EPROTO, "MANAGE reply length"};
  buffer.len = msg.len;
  buffer.count = msg.count;
  return {};
}

Result<uint32_t> DeviceNode::createBo(uint64_t size) const {
  qaic_create_bo arg{};
  arg.size = size;
  if (auto r = drmCall(DRM_IOCTL_QAIC_CREATE_BO, &arg, "CREATE_BO"); !r) return r.sysError();
  return arg.handle;
}

Result<uint64_t> DeviceNode::mmapBo(uint32_t handle) const {
  qaic_mmap_bo arg{};
  arg.handle = handle;
  if (auto r = drmCall(DRM_IOCTL_QAIC_MMAP_BO, &arg, "MMAP_BO"); !r) return r.sysError();
  return static_cast<uint64_t>(arg.offset);
}

Result<void> DeviceNode::attachSlices(qaic_attach_slice_hdr hdr,
                                      std::span<const qaic_attach_slice_entry> slices) const {
  qaic_attach_slice arg{};
  arg.hdr = hdr;
  arg.hdr.count = static_cast<uint32_t>(slices.size());
  arg.data = reinterpret_cast<uintptr_t>(slices.data());
  return drmCall(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &arg, "ATTACH_SLICE_BO");
}

Result<void> DeviceNode::execute(uint32_t dbcId, std::span<const qaic_execute_entry> entries) const {
  qaic_execute arg{};
  arg.hdr.count = static_cast<uint32_t>(entries.size());
  arg.hdr.dbc_id = dbcId;
  arg.data = reinterpret_cast<uintptr_t>(entries.data());
  return rawIoctl(DRM_IOCTL_QAIC_EXECUTE_BO, &arg, "EXECUTE_BO");
}

Result<void> DeviceNode::partialExecute(uint32_t dbcId, std::span<const qaic_partial_execute_entry> entries) const {
  qaic_execute arg{};
  arg.hdr.count = static_cast<uint32_t>(entries.size());
  arg.hdr.dbc_id = dbcId;
  arg.data = reinterpret_cast<uintptr_t>(entries.data());
  return rawIoctl(DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO, &arg, "PARTIAL_EXECUTE_BO");
}

Result<void> DeviceNode::waitBo(uint32_t handle, uint32_t dbcId, uint32_t timeoutMs) const {
  qaic_wait arg{};
  arg.handle = handle;
  arg.timeout = timeoutMs;
  arg.dbc_id = dbcId;
  return drmCall(DRM_IOCTL_QAIC_WAIT_BO, &arg, "WAIT_BO");
}

Result<void> DeviceNode::perfStats(uint32_t dbcId, std::span<qaic_perf_stats_entry> entries) const {
  if (entries.size() > UINT16_MAX) return SysError{EINVAL, "PERF_STATS_BO count"};
  qaic_perf_stats arg{};
  arg.hdr.count = static_cast<uint16_t>(entries.size());
  arg.hdr.dbc_id = dbcId;
  arg.data = reinterpret_cast<uintptr_t>(entries.data());
  return drmCall(DRM_IOCTL_QAIC_PERF_STATS_BO, &arg, "PERF_STATS_BO");
}

Result<void> DeviceNode::detachSlice(uint32_t handle) const {
  qaic_detach_slice arg{};
  arg.handle = handle;
  return drmCall(DRM_IOCTL_QAIC_DETACH_SLICE_BO, &arg, "DETACH_SLICE_BO");
}

Result<qaic_emu_dbc_info> DeviceNode::emuDbcInfo(uint32_t dbcId) const {
  qaic_emu_dbc_info arg{};
  arg.dbc_id = dbcId;
  if (auto r = drmCall(DRM_IOCTL_QAIC_EMU_DBC_INFO, &arg, "EMU_DBC_INFO"); !r) return r.sysError();
  return arg;
}

Result<void> DeviceNode::closeBufferHandle(uint32_t handle) const {
  if (drmCloseBufferHandle(fd(), handle) != 0) return lastError("GEM_CLOSE");
  return {};
}

// The plain call first, as on a card: under `qaic-emu --namespace` the emulator's supervisor
// makes the descriptor in this process. On an emulated node without one it gets EBADF (a FUSE
// server cannot create descriptors in its caller), and this process opens the node's memory file
// itself, as the kernel would make the dma-buf, for the device to check (docs/emulator.md,
// "Buffer objects, GEM and PRIME").
Result<UniqueFd> DeviceNode::primeHandleToFd(uint32_t handle, uint32_t flags) const {
  int out = -1;
  if (drmPrimeHandleToFD(fd(), handle, flags, &out) == 0) return UniqueFd(out);
  if (errno != EBADF || !isEmulated()) return lastError("PRIME_HANDLE_TO_FD");
  auto offset = mmapBo(handle);
  if (!offset) return SysError{offset.error(), "PRIME_HANDLE_TO_FD: MMAP_BO"};
  // The export the kernel would make, made here: a new open file description of the node's
  // memory file, positioned at the BO's offset (how the emulator tells which BO it is).
  const auto path = shmDir_ / deviceMemoryFileName(index_);
  UniqueFd file(::open(
      path.c_str(), ((flags & DRM_RDWR) ? O_RDWR : O_RDONLY) | ((flags & DRM_CLOEXEC) ? O_CLOEXEC : 0) | O_NOFOLLOW));
  if (!file) return SysError{errno, "PRIME_HANDLE_TO_FD: open " + path.string()};
  if (::lseek(file.get(), static_cast<off_t>(*offset), SEEK_SET) < 0)
    return SysError{errno, "PRIME_HANDLE_TO_FD: seek " + path.string()};
  drm_prime_handle args{handle, flags, file.get()};
  if (auto r = drmCall(DRM_IOCTL_PRIME_HANDLE_TO_FD, &args, "PRIME_HANDLE_TO_FD"); !r) return r.sysError();
  return file;
}

Result<uint32_t> DeviceNode::primeFdToHandle(int dmabuf) const {
  uint32_t handle = 0;
  if (drmPrimeFDToHandle(fd(), dmabuf, &handle) != 0) return lastError("PRIME_FD_TO_HANDLE");
  return handle;
}

Result<std::string> DeviceNode::busId() const {
  char* busid = drmGetBusid(fd());
  if (busid == nullptr) return lastError("GET_UNIQUE");
  std::string text(busid);
  drmFreeBusid(busid);
  return text;
}

}  // namespace qaic::driver
