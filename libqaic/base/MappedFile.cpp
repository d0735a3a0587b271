// SPDX-License-Identifier: Apache-2.0
#include "base/MappedFile.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <utility>

namespace qaic {

Result<MappedFile> MappedFile::open(const std::filesystem::path& path, std::size_t size) {
  const std::string name = path.string();
  UniqueFd fd(::open(name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return SysError{errno, "open " + name};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return SysError{errno, "fstat " + name};
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < size)
    return SysError{EPROTO, "memory file " + name + " holds " + std::to_string(st.st_size) + " bytes, expected " +
                                std::to_string(size)};
  void* address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (address == MAP_FAILED) return SysError{errno, "mmap " + name};
  return MappedFile(std::move(fd), address, size);
}

Result<MappedFile> MappedFile::openReadOnly(const std::filesystem::path& path) {
  const std::string name = path.string();
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysError{errno, "open " + name};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return SysError{errno, "fstat " + name};
  if (!S_ISREG(st.st_mode)) return SysError{EINVAL, name + " is not a regular file"};
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return MappedFile(std::move(fd), nullptr, 0);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (address == MAP_FAILED) return SysError{errno, "mmap " + name};
  return MappedFile(std::move(fd), address, size);
}

Result<MappedFile> MappedFile::map(int fd, std::size_t size, uint64_t offset, const char* what) {
  void* address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (address == MAP_FAILED) return lastError(what);
  return MappedFile(UniqueFd(), address, size);
}

MappedFile::~MappedFile() { unmap(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : fd_(std::move(other.fd_)),
      address_(std::exchange(other.address_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    fd_ = std::move(other.fd_);
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::unmap() {
  if (address_ != nullptr) ::munmap(address_, size_);
  address_ = nullptr;
  size_ = 0;
  fd_.reset();
}

}  // namespace qaic
