// SPDX-License-Identifier: Apache-2.0
#include "ClientHelpers.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace qaic::testing {

Mapping::~Mapping() {
  if (data_ != nullptr) munmap(data_, size_);
}

bool Mapping::map(const std::string& path, std::size_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return true;
}

bool Mapping::mapAt(int fd, std::size_t bytes, uint64_t offset) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return false;
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return true;
}

int createMappedBo(RawDevice& dev, const std::string& shmDir, uint64_t size, Bo& bo, unsigned nodeIndex) {
  if (int rc = dev.createBo(size, bo.handle)) return rc;
  uint64_t offset = 0;
  if (int rc = dev.mmapOffset(bo.handle, offset)) return rc;
  bo.size = size;
  if (bo.map.mapAt(dev.fd(), size, offset)) return 0;
  if (errno != ENODEV) return errno;
  const int file = ::open((shmDir + "/" + driver::deviceMemoryFileName(nodeIndex)).c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0) return errno;
  const bool mapped = bo.map.mapAt(file, size, offset);
  const int err = errno;
  ::close(file);
  return mapped ? 0 : err;
}

int transferAndActivate(RawDevice& dev, const std::vector<std::byte>& container, uint32_t loadId, uint32_t queueSize,
                        int eventfd, uint32_t& dbcId) {
  std::vector<std::byte> msg;
  appendBytes(msg, qaic_manage_trans_dma_xfer{{QAIC_TRANS_DMA_XFER_FROM_USR, 32},
                                              loadId,
                                              0,
                                              reinterpret_cast<uint64_t>(container.data()),
                                              container.size()});
  appendBytes(msg, qaic_manage_trans_activate_to_dev{{QAIC_TRANS_ACTIVATE_FROM_USR, 24},
                                                     queueSize,
                                                     static_cast<uint32_t>(eventfd),
                                                     driver::makeActivateOptions(loadId, 0),
                                                     0});
  uint32_t len = 0, count = 0;
  if (int rc = dev.manage(msg, 56, 2, len, count)) return rc;
  qaic_manage_trans_activate_from_dev resp;
  std::memcpy(&resp, msg.data(), sizeof resp);
  if (count != 1 || resp.hdr.type != QAIC_TRANS_ACTIVATE_FROM_DEV || resp.status != 0) return EPROTO;
  dbcId = resp.dbc_id;
  return 0;
}

int attachOneSlice(RawDevice& dev, uint32_t dbcId, const Bo& bo, uint32_t dir, const qaic_attach_slice_entry& entry) {
  qaic_attach_slice a{{1, dbcId, bo.handle, dir, bo.size}, reinterpret_cast<uint64_t>(&entry)};
  return rawIoctl(dev.fd(), DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a);
}

}  // namespace qaic::testing
