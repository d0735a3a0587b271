// SPDX-License-Identifier: Apache-2.0
#include "HostBuffers.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace qaic::testing {

MemfdBuffer::MemfdBuffer(std::size_t bytes) : bytes_(bytes) {
  fd_ = ::memfd_create("qaic-test-dmabuf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0 || ::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    const int error = errno;
    ::close(fd_);
    throw std::system_error(error, std::generic_category(), "sizing the memfd");
  }
  void* mapping = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapping == MAP_FAILED) {
    const int error = errno;
    ::close(fd_);
    throw std::system_error(error, std::generic_category(), "mapping the memfd");
  }
  data_ = static_cast<std::byte*>(mapping);
}

MemfdBuffer::~MemfdBuffer() {
  ::munmap(data_, bytes_);
  ::close(fd_);
}

rt::QBuffer MemfdBuffer::qbuffer() const {
  rt::QBuffer b;
  b.type = rt::QBUFFER_TYPE_DMABUF;
  b.handle = fd_;
  b.size = bytes_;
  b.buf = reinterpret_cast<uint8_t*>(data_);
  return b;
}

}  // namespace qaic::testing
