#include "driver/DeviceNode.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>

#include "driver/Ptracer.hpp"

namespace qaic::driver {

Result<DeviceNode> DeviceNode::open(const DeviceRoot& root, unsigned index, int flags) {
  const std::string path = root.nodePath(index).string();
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return SysError{errno, "open " + path};
  SysfsDevice sysfs(root, index);
  std::filesystem::path shmDir;
  if (auto dir = sysfs.read("qaic-emu/shm_dir")) {
    shmDir = *dir;
    // Without the declaration the emulator cannot read our ioctl arguments: fail here, clearly.
    if (auto traced = declareEmulatorPtracer(sysfs); !traced) return traced.sysError();
  }
  return DeviceNode(std::move(fd), index, std::move(sysfs), std::move(shmDir));
}

Result<void> DeviceNode::rawIoctl(unsigned long request, void* argument, const char* name) const {
  int rc;
  do {
    rc = ::ioctl(fd_.get(), request, argument);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return lastError(name);
  return {};
}

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
  if (auto r = rawIoctl(DRM_IOCTL_QAIC_CREATE_BO, &arg, "CREATE_BO"); !r) return r.sysError();
  return arg.handle;
}

Result<uint64_t> DeviceNode::mmapBo(uint32_t handle) const {
  qaic_mmap_bo arg{};
  arg.handle = handle;
  if (auto r = rawIoctl(DRM_IOCTL_QAIC_MMAP_BO, &arg, "MMAP_BO"); !r) return r.sysError();
  return static_cast<uint64_t>(arg.offset);
}

Result<void> DeviceNode::attachSlices(qaic_attach_slice_hdr hdr,
                                      std::span<const qaic_attach_slice_entry> slices) const {
  qaic_attach_slice arg{};
  arg.hdr = hdr;
  arg.hdr.count = static_cast<uint32_t>(slices.size());
  arg.data = reinterpret_cast<uintptr_t>(slices.data());
  return rawIoctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &arg, "ATTACH_SLICE_BO");
}

Result<void> DeviceNode::execute(uint32_t dbcId, std::span<const qaic_execute_entry> entries) const {
  qaic_execute arg{};
  arg.hdr.count = static_cast<uint32_t>(entries.size());
  arg.hdr.dbc_id = dbcId;
  arg.data = reinterpret_cast<uintptr_t>(entries.data());
  return rawIoctl(DRM_IOCTL_QAIC_EXECUTE_BO, &arg, "EXECUTE_BO");
}

Result<void> DeviceNode::partialExecute(uint32_t dbcId,
                                        std::span<const qaic_partial_execute_entry> entries) const {
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
  return rawIoctl(DRM_IOCTL_QAIC_WAIT_BO, &arg, "WAIT_BO");
}

Result<void> DeviceNode::perfStats(uint32_t dbcId, std::span<qaic_perf_stats_entry> entries) const {
  if (entries.size() > UINT16_MAX) return SysError{EINVAL, "PERF_STATS_BO count"};
  qaic_perf_stats arg{};
  arg.hdr.count = static_cast<uint16_t>(entries.size());
  arg.hdr.dbc_id = dbcId;
  arg.data = reinterpret_cast<uintptr_t>(entries.data());
  return rawIoctl(DRM_IOCTL_QAIC_PERF_STATS_BO, &arg, "PERF_STATS_BO");
}

Result<void> DeviceNode::detachSlice(uint32_t handle) const {
  qaic_detach_slice arg{};
  arg.handle = handle;
  return rawIoctl(DRM_IOCTL_QAIC_DETACH_SLICE_BO, &arg, "DETACH_SLICE_BO");
}

Result<qaic_emu_dbc_info> DeviceNode::emuDbcInfo(uint32_t dbcId) const {
  qaic_emu_dbc_info arg{};
  arg.dbc_id = dbcId;
  if (auto r = rawIoctl(DRM_IOCTL_QAIC_EMU_DBC_INFO, &arg, "EMU_DBC_INFO"); !r) return r.sysError();
  return arg;
}

}  // namespace qaic::driver
