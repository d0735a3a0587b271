// SPDX-License-Identifier: Apache-2.0
// Test helper: the device node opened and driven with raw ioctls, as a program written against
// the kernel uAPI would.
#pragma once

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "driver/DeviceProtocol.hpp"

namespace qaic::testing {

// 0 or the errno of the ioctl.
inline int rawIoctl(int fd, unsigned long cmd, void* arg) { return ::ioctl(fd, cmd, arg) == 0 ? 0 : errno; }

class RawDevice {
 public:
  explicit RawDevice(const std::filesystem::path& node) : fd_(::open(node.c_str(), O_RDWR | O_CLOEXEC)) {}
  ~RawDevice() { close(); }
  RawDevice(const RawDevice&) = delete;
  RawDevice& operator=(const RawDevice&) = delete;
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

  // CREATE_BO; returns errno, sets handle.
  int createBo(uint64_t size, uint32_t& handle) {
    qaic_create_bo a{};
    a.size = size;
    int rc = rawIoctl(fd_, DRM_IOCTL_QAIC_CREATE_BO, &a);
    handle = a.handle;
    return rc;
  }
  int mmapOffset(uint32_t handle, uint64_t& offset) {
    qaic_mmap_bo a{};
    a.handle = handle;
    int rc = rawIoctl(fd_, DRM_IOCTL_QAIC_MMAP_BO, &a);
    offset = a.offset;
    return rc;
  }
  // One MANAGE message; `msg` must have room for the answers (QAIC_MANAGE_MAX_MSG_LENGTH).
  int manage(std::vector<std::byte>& msg, uint32_t len, uint32_t count, uint32_t& outLen, uint32_t& outCount) {
    msg.resize(QAIC_MANAGE_MAX_MSG_LENGTH);
    qaic_manage_msg m{len, count, reinterpret_cast<uint64_t>(msg.data())};
    int rc = rawIoctl(fd_, DRM_IOCTL_QAIC_MANAGE, &m);
    outLen = m.len;
    outCount = m.count;
    return rc;
  }

 private:
  int fd_;
};

template <typename T>
void appendBytes(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

}  // namespace qaic::testing
