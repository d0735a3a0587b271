// SPDX-License-Identifier: Apache-2.0
// One open accel device node ($QAIC_ROOT/dev/accel/accelN, opened O_CLOEXEC) and typed wrappers
// for the uAPI ioctls and the DRM core's (through libdrm). Every wrapper returns the errno as a
// value (EAGAIN included) and never throws. Closing the node frees everything the open file held
// on the device (TERMINATE).
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "driver/ManageMessage.hpp"
#include "driver/SysfsDevice.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::driver {

class DeviceNode {
 public:
  // Opens the node read-write, checks with drmGetVersion that its driver is qaic (ENODEV naming
  // the node and the driver otherwise), learns whether it is emulated (qaic-emu/shm_dir) and, if
  // so, declares the emulator as ptracer (see Ptracer.hpp).
  static Result<DeviceNode> open(const DeviceRoot& root, unsigned index, int flags = O_RDWR);

  DeviceNode(DeviceNode&&) noexcept = default;
  DeviceNode& operator=(DeviceNode&&) noexcept = default;
  DeviceNode(const DeviceNode&) = delete;
  DeviceNode& operator=(const DeviceNode&) = delete;

  int fd() const { return fd_->get(); }
  // The open file, for objects whose handles live only as long as it does (a BufferObject
  // closes its handle on destruction only while the file is still open).
  std::weak_ptr<const UniqueFd> file() const { return fd_; }
  unsigned index() const { return index_; }
  const SysfsDevice& sysfs() const { return sysfs_; }
  // The emulator's shared-memory directory; empty for a real device.
  const std::filesystem::path& shmDir() const { return shmDir_; }
  bool isEmulated() const { return !shmDir_.empty(); }
  // "device 0 (/root/dev/accel/accel0)", for messages.
  std::string name() const;

  // ENODEV naming the device once the device behind this open node is gone, as the kernel's
  // removal answers every later ioctl; nothing while it is there. On the emulated device the
  // emulator that serves it must be alive (its instance lock, DeviceProtocol.hpp): one fcntl, no
  // round trip through FUSE, so a hung but living emulator is still there (a slow device is a
  // timeout, a dead one never is). A real device's removal shows in its ioctls' ENODEV instead.
  Result<void> checkPresent() const;

  // MANAGE: sends buffer's transactions; on success buffer holds the reply (len and count updated).
  Result<void> manage(ManageBuffer& buffer) const;
  Result<uint32_t> createBo(uint64_t size) const;  // -> handle
  Result<uint64_t> mmapBo(uint32_t handle) const;  // -> fake offset
  // hdr.count is set from `slices`.
  Result<void> attachSlices(qaic_attach_slice_hdr hdr, std::span<const qaic_attach_slice_entry> slices) const;
  Result<void> execute(uint32_t dbcId, std::span<const qaic_execute_entry> entries) const;
  Result<void> partialExecute(uint32_t dbcId, std::span<const qaic_partial_execute_entry> entries) const;
  Result<void> waitBo(uint32_t handle, uint32_t dbcId, uint32_t timeoutMs) const;
  Result<void> perfStats(uint32_t dbcId, std::span<qaic_perf_stats_entry> entries) const;
  Result<void> detachSlice(uint32_t handle) const;
  Result<qaic_emu_dbc_info> emuDbcInfo(uint32_t dbcId) const;  // emulator extension

  // The DRM core's buffer calls (libdrm). GEM_CLOSE: the handle goes; the BO with it once no
  // slice or queued request holds it.
  Result<void> closeBufferHandle(uint32_t handle) const;
  // PRIME export: a dma-buf descriptor of the BO (flags DRM_CLOEXEC, DRM_RDWR), by
  // drmPrimeHandleToFD. Only where the emulated node cannot create the descriptor in this
  // process (EBADF: no `qaic-emu --namespace` supervisor) the node's memory file is opened as
  // the flags ask, positioned at the BO, and checked by the device (emulator.md, PRIME).
  Result<UniqueFd> primeHandleToFd(uint32_t handle, uint32_t flags) const;
  // PRIME import of a dma-buf descriptor of this process (an export of any device, a memfd):
  // the handle naming its memory on this open file.
  Result<uint32_t> primeFdToHandle(int fd) const;
  // The PCI address of the device (DRM_IOCTL_GET_UNIQUE, libdrm's drmGetBusid).
  Result<std::string> busId() const;

  // Any request with any argument, for conformance tests that send malformed arguments. EINTR
  // is retried; any other errno (EAGAIN included) is returned.
  Result<void> rawIoctl(unsigned long request, void* argument, const char* name) const;

 private:
  DeviceNode(UniqueFd fd, unsigned index, std::string path, SysfsDevice sysfs, std::filesystem::path shmDir,
             UniqueFd instanceLock)
      : fd_(std::make_shared<UniqueFd>(std::move(fd))),
        index_(index),
        path_(std::move(path)),
        sysfs_(std::move(sysfs)),
        shmDir_(std::move(shmDir)),
        instanceLock_(std::make_shared<UniqueFd>(std::move(instanceLock))) {}
  // libdrm's drmIoctl, which retries EINTR and EAGAIN: for the calls that never answer EAGAIN.
  Result<void> drmCall(unsigned long request, void* argument, const char* name) const;

  std::shared_ptr<UniqueFd> fd_;
  unsigned index_ = 0;
  std::string path_;
  SysfsDevice sysfs_;
  std::filesystem::path shmDir_;
  std::shared_ptr<UniqueFd> instanceLock_;  // the serving emulator's; empty for a real device
};

}  // namespace qaic::driver
