// SPDX-License-Identifier: Apache-2.0
// The ioctl table of a device node and its dispatch, as drm_ioctl() does them, and the DRM
// core's own ioctls as the mainline kernel answers them on an accel node: the file is never a
// DRM master, is authenticated only when its opener had CAP_SYS_ADMIN (uid 0 here), and belongs
// to a driver with GEM and PRIME but without modesetting, syncobjs or the legacy DRI1 interface.
// The handlers the table names live by concern: MANAGE in DeviceManage.cpp, buffer objects (GEM
// and PRIME included) and the data path in DeviceDataPath.cpp.
#include <drm.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "Device.hpp"
#include "Log.hpp"
#include "UserMemory.hpp"

// Newer than Debian's libdrm headers.
#ifndef DRM_IOCTL_SET_CLIENT_NAME
struct drm_set_client_name {
  __u64 name_len;
  __u64 name;
};
#define DRM_IOCTL_SET_CLIENT_NAME DRM_IOWR(0xD1, struct drm_set_client_name)
#endif

namespace qaic::emu {
namespace {

// drm_ioctl_desc flags (include/drm/drm_ioctl.h).
constexpr unsigned kAuth = 1u << 0;
constexpr unsigned kMaster = 1u << 1;
constexpr unsigned kRootOnly = 1u << 2;

using Handler = int (Device::*)(OpenFile&, const IoctlCall&);

// One entry of the dispatch table: a handler with its argument layout (`cmd`), or the errno the
// kernel's function returns for an accel device without calling anything of ours.
struct IoctlEntry {
  unsigned cmd = 0;
  unsigned flags = 0;
  Handler handler = nullptr;
  int result = EINVAL;  // when there is no handler
  bool known = false;
};

}  // namespace

struct IoctlDispatch {
  static std::array<IoctlEntry, 256> build();
};

std::array<IoctlEntry, 256> IoctlDispatch::build() {
  std::array<IoctlEntry, 256> t{};
  auto handler = [&](unsigned cmd, unsigned flags, Handler h) { t[_IOC_NR(cmd)] = IoctlEntry{cmd, flags, h, 0, true}; };
  auto answer = [&](unsigned nr, unsigned flags, int result) { t[nr] = IoctlEntry{0, flags, nullptr, result, true}; };
  // DRM core.
  handler(DRM_IOCTL_VERSION, 0, &Device::drmVersion);
  handler(DRM_IOCTL_GET_UNIQUE, 0, &Device::drmGetUnique);
  answer(0x02, 0, EINVAL);  // GET_MAGIC: magics belong to a master, which an accel file lacks
  handler(DRM_IOCTL_GET_CLIENT, 0, &Device::drmGetClient);
  handler(DRM_IOCTL_GET_STATS, 0, &Device::drmGetStats);
  answer(0x07, kMaster, 0);  // SET_VERSION
  handler(DRM_IOCTL_GEM_CLOSE, 0, &Device::gemClose);
  handler(DRM_IOCTL_GEM_FLINK, kAuth, &Device::gemFlink);
  handler(DRM_IOCTL_GEM_OPEN, kAuth, &Device::gemOpen);
  handler(DRM_IOCTL_GET_CAP, 0, &Device::drmGetCap);
  answer(0x0d, 0, EOPNOTSUPP);                             // SET_CLIENT_CAP: no modesetting
  answer(0x10, kAuth | kMaster | kRootOnly, EINVAL);       // SET_UNIQUE
  answer(0x11, kMaster, 0);                                // AUTH_MAGIC
  for (unsigned nr : {0x12u, 0x13u, 0x27u, 0x28u, 0x3fu})  // BLOCK, UNBLOCK, ADD/RM/UPDATE_DRAW
    answer(nr, kAuth | kMaster | kRootOnly, 0);
  handler(DRM_IOCTL_SET_MASTER, 0, &Device::drmMasterless);
  handler(DRM_IOCTL_DROP_MASTER, 0, &Device::drmMasterless);
  answer(0x2c, kAuth, 0);  // FINISH: a no-op
  handler(DRM_IOCTL_PRIME_HANDLE_TO_FD, 0, &Device::primeHandleToFd);
  handler(DRM_IOCTL_PRIME_FD_TO_HANDLE, 0, &Device::primeFdToHandle);
  for (unsigned nr : {0x3au, 0x3bu, 0x3cu}) answer(nr, 0, EOPNOTSUPP);  // vblank, CRTC sequence
  // Modesetting (0xA0-0xBE, 0xCE, 0xD0): EOPNOTSUPP, or EACCES first for the master-only ones;
  // dumb buffers: ENOSYS (the driver has no dumb_create).
  for (unsigned nr = 0xA0; nr <= 0xBE; ++nr) answer(nr, 0, EOPNOTSUPP);
  for (unsigned nr : {0xA2u, 0xA3u, 0xA5u, 0xA8u, 0xA9u, 0xABu, 0xB0u, 0xB1u, 0xB7u, 0xBAu, 0xBBu, 0xBCu})
    answer(nr, kMaster, EOPNOTSUPP);
  for (unsigned nr : {0xB2u, 0xB3u, 0xB4u}) answer(nr, 0, ENOSYS);
  answer(0xCE, 0, EOPNOTSUPP);
  answer(0xD0, 0, EOPNOTSUPP);
  // Syncobjs (0xBF-0xC5, 0xCA-0xCD, 0xCF): the driver has none. Leases (0xC6-0xC9): master only.
  for (unsigned nr : {0xBFu, 0xC0u, 0xC1u, 0xC2u, 0xC3u, 0xC4u, 0xC5u, 0xCAu, 0xCBu, 0xCCu, 0xCDu, 0xCFu})
    answer(nr, 0, EOPNOTSUPP);
  for (unsigned nr = 0xC6; nr <= 0xC9; ++nr) answer(nr, kMaster, EOPNOTSUPP);
  handler(DRM_IOCTL_SET_CLIENT_NAME, 0, &Device::setClientName);
  // The qaic driver's ioctls and the emulator's extension.
  handler(DRM_IOCTL_QAIC_MANAGE, 0, &Device::manageIoctl);
  handler(DRM_IOCTL_QAIC_CREATE_BO, 0, &Device::createBo);
  handler(DRM_IOCTL_QAIC_MMAP_BO, 0, &Device::mmapBo);
  handler(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, 0, &Device::attachSlice);
  handler(DRM_IOCTL_QAIC_EXECUTE_BO, 0, &Device::executeBo);
  handler(DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO, 0, &Device::partialExecuteBo);
  handler(DRM_IOCTL_QAIC_WAIT_BO, 0, &Device::waitBo);
  handler(DRM_IOCTL_QAIC_PERF_STATS_BO, 0, &Device::perfStats);
  handler(DRM_IOCTL_QAIC_DETACH_SLICE_BO, 0, &Device::detachSlice);
  handler(DRM_IOCTL_QAIC_EMU_DBC_INFO, 0, &Device::dbcInfo);
  return t;
}

namespace {

const std::array<IoctlEntry, 256>& ioctlTable() {
  static const std::array<IoctlEntry, 256> table = IoctlDispatch::build();
  return table;
}

// drm_ioctl_permit() for an accel file.
int permitted(unsigned flags, const OpenFile& f) {
  const bool admin = f.uid == 0;
  if ((flags & kRootOnly) && !admin) return EACCES;
  if ((flags & kAuth) && !admin) return EACCES;  // authenticated only by CAP_SYS_ADMIN at open
  if (flags & kMaster) return EACCES;            // an accel file is never the master
  return 0;
}

// drm_copy_field(): at most *length bytes of `value`, no terminating NUL; *length becomes the
// full length so that the caller can size its buffer and ask again.
int copyField(const UserMemory& mem, uint64_t buffer, __kernel_size_t& length, const std::string& value) {
  const std::size_t n = std::min<std::size_t>(value.size(), length);
  length = value.size();
  if (n != 0 && buffer != 0 && mem.write(buffer, value.data(), n)) return EFAULT;
  return 0;
}

}  // namespace

int Device::ioctl(OpenFile& file, unsigned cmd, const IoctlCall& call) {
  if (removed_.load()) return ENODEV;
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || (file.partition && file.partition->ended)) return ENODEV;
  }
  if (_IOC_TYPE(cmd) != DRM_IOCTL_BASE) return ENOTTY;
  const IoctlEntry& entry = ioctlTable()[_IOC_NR(cmd)];
  if (!entry.known) return EINVAL;
  if (int err = permitted(entry.flags, file)) return err;
  if (entry.handler == nullptr) return entry.result;
  // Like drm_ioctl(): the handler sees the argument at the size its own definition has, the
  // caller's bytes copied in only when both sides say "in", zeros past them, and only what both
  // say "out" copied back. A caller built against a smaller or larger struct still works.
  const std::size_t driverSize = _IOC_SIZE(entry.cmd);
  std::size_t inSize = _IOC_SIZE(cmd), outSize = inSize;
  if (!(_IOC_DIR(cmd) & _IOC_DIR(entry.cmd) & _IOC_WRITE)) inSize = 0;
  if (!(_IOC_DIR(cmd) & _IOC_DIR(entry.cmd) & _IOC_READ)) outSize = 0;
  std::vector<std::byte> data(std::max({inSize, outSize, driverSize}));
  // A call without an argument buffer (size 0) has a null pointer: memcpy may not see it.
  if (const std::size_t n = std::min(inSize, call.inSize); n != 0) std::memcpy(data.data(), call.in, n);
  IoctlCall normalized = call;
  normalized.in = data.data();
  normalized.inSize = data.size();
  normalized.out = data.data();
  normalized.outSize = data.size();
  const int err = (this->*entry.handler)(file, normalized);
  if (const std::size_t n = std::min(outSize, call.outSize); err == 0 && n != 0) std::memcpy(call.out, data.data(), n);
  return err;
}

int Device::drmVersion(OpenFile&, const IoctlCall& c) {
  auto v = argIn<drm_version>(c);
  // qaic declares no version numbers; the date field is deprecated and reads "0".
  v.version_major = 0;
  v.version_minor = 0;
  v.version_patchlevel = 0;
  const UserMemory mem(c.pid);
  int err = copyField(mem, reinterpret_cast<uintptr_t>(v.name), v.name_len, "qaic");
  if (err == 0) err = copyField(mem, reinterpret_cast<uintptr_t>(v.date), v.date_len, "0");
  if (err == 0) err = copyField(mem, reinterpret_cast<uintptr_t>(v.desc), v.desc_len, "Qualcomm Cloud AI Accelerators");
  if (err == 0) argOut(c, v);
  return err;
}

int Device::drmGetUnique(OpenFile&, const IoctlCall& c) {
  auto u = argIn<drm_unique>(c);
  const std::string unique = pciAddress();
  // The whole string or nothing: a short buffer only learns the length.
  if (u.unique_len >= unique.size() &&
      UserMemory(c.pid).write(reinterpret_cast<uintptr_t>(u.unique), unique.data(), unique.size()))
    return EFAULT;
  u.unique_len = unique.size();
  argOut(c, u);
  return 0;
}

int Device::drmGetClient(OpenFile& f, const IoctlCall& c) {
  auto client = argIn<drm_client>(c);
  if (client.idx != 0) return EINVAL;  // clients are not enumerable: only "yourself"
  client.auth = f.uid == 0 ? 1 : 0;
  const pid_t tgid = threadGroupOf(c.pid);
  client.pid = static_cast<unsigned long>(tgid > 0 ? tgid : c.pid);
  client.uid = 65534;  // overflowuid, as the kernel reports it
  client.magic = 0;
  client.iocs = 0;
  argOut(c, client);
  return 0;
}

int Device::drmGetStats(OpenFile&, const IoctlCall& c) {
  drm_stats stats{};
  argOut(c, stats);
  return 0;
}

int Device::drmGetCap(OpenFile&, const IoctlCall& c) {
  auto cap = argIn<drm_get_cap>(c);
  cap.value = 0;
  switch (cap.capability) {
    case DRM_CAP_TIMESTAMP_MONOTONIC: cap.value = 1; break;
    case DRM_CAP_PRIME: cap.value = DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT; break;
    case DRM_CAP_SYNCOBJ:
    case DRM_CAP_SYNCOBJ_TIMELINE: break;
    default: return EOPNOTSUPP;  // the rest are modesetting capabilities
  }
  argOut(c, cap);
  return 0;
}

// SET_MASTER / DROP_MASTER: only CAP_SYS_ADMIN gets past drm_master_check_perm(), and then the
// accel file has no master to become or to drop.
int Device::drmMasterless(OpenFile& f, const IoctlCall&) { return f.uid == 0 ? EINVAL : EACCES; }

int Device::setClientName(OpenFile& f, const IoctlCall& c) {
  const auto args = argIn<drm_set_client_name>(c);
  constexpr uint64_t kMaxName = 64;
  if (args.name_len > kMaxName) return EINVAL;
  std::string name(args.name_len, '\0');
  if (args.name_len != 0 && UserMemory(c.pid).read(args.name, name.data(), name.size())) return EFAULT;
  for (char ch : name)
    if (ch <= 0x20 || ch > 0x7e) return EINVAL;  // printable, no spaces
  std::lock_guard lock(mutex_);
  f.clientName = std::move(name);
  return 0;
}

}  // namespace qaic::emu
