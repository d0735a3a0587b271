// One open accel device node ($QAIC_ROOT/dev/accel/accelN, opened O_CLOEXEC) and typed wrappers
// for the uAPI ioctls. Every wrapper returns the errno as a value (EAGAIN included) and never
// throws. Closing the node frees everything the open file held on the device (TERMINATE).
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "driver/ManageMessage.hpp"
#include "base/Result.hpp"
#include "driver/SysfsDevice.hpp"
#include "base/UniqueFd.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::driver {

class DeviceNode {
 public:
  // Opens the node read-write, learns whether it is emulated (device/emu_shm_dir) and, if so,
  // declares the emulator as ptracer (see Ptracer.hpp).
  static Result<DeviceNode> open(const DeviceRoot& root, unsigned index, int flags = O_RDWR);

  int fd() const { return fd_.get(); }
  unsigned index() const { return index_; }
  const SysfsDevice& sysfs() const { return sysfs_; }
  // The emulator's shared-memory directory; empty for a real device.
  const std::filesystem::path& shmDir() const { return shmDir_; }
  bool isEmulated() const { return !shmDir_.empty(); }

  // MANAGE: sends buffer's transactions; on success buffer holds the reply (len and count updated).
  Result<void> manage(ManageBuffer& buffer) const;
  Result<uint32_t> createBo(uint64_t size) const;              // -> handle
  Result<uint64_t> mmapBo(uint32_t handle) const;              // -> fake offset
  // hdr.count is set from `slices`.
  Result<void> attachSlices(qaic_attach_slice_hdr hdr,
                            std::span<const qaic_attach_slice_entry> slices) const;
  Result<void> execute(uint32_t dbcId, std::span<const qaic_execute_entry> entries) const;
  Result<void> partialExecute(uint32_t dbcId,
                              std::span<const qaic_partial_execute_entry> entries) const;
  Result<void> waitBo(uint32_t handle, uint32_t dbcId, uint32_t timeoutMs) const;
  Result<void> perfStats(uint32_t dbcId, std::span<qaic_perf_stats_entry> entries) const;
  Result<void> detachSlice(uint32_t handle) const;
  Result<qaic_emu_dbc_info> emuDbcInfo(uint32_t dbcId) const;  // emulator extension

  // Any request with any argument, for conformance tests that send malformed arguments.
  Result<void> rawIoctl(unsigned long request, void* argument, const char* name) const;

 private:
  DeviceNode(UniqueFd fd, unsigned index, SysfsDevice sysfs, std::filesystem::path shmDir)
      : fd_(std::move(fd)), index_(index), sysfs_(std::move(sysfs)), shmDir_(std::move(shmDir)) {}

  UniqueFd fd_;
  unsigned index_ = 0;
  SysfsDevice sysfs_;
  std::filesystem::path shmDir_;
};

}  // namespace qaic::driver
