// SPDX-License-Identifier: Apache-2.0
#include "driver/BufferObject.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xf86drm.h>

namespace qaic::driver {

Result<BufferObject> BufferObject::create(const DeviceNode& node, std::size_t size) {
  auto handle = node.createBo(size);
  if (!handle) return handle.sysError();
  // From here on the handle goes with `closer` unless the BO is built.
  auto closer = [&](SysError error) {
    (void)node.closeBufferHandle(*handle);
    return error;
  };
  auto offset = node.mmapBo(*handle);
  if (!offset) return closer(offset.sysError());
  auto memory = MappedFile::map(node.fd(), size, *offset, "mmap BO");
  if (!memory && memory.error() == ENODEV && node.isEmulated()) {
    // An emulator without FUSE passthrough (sysfs qaic-emu/passthrough 0) cannot map the node:
    // the same pages are its memory file's at the same offset.
    const auto path = node.shmDir() / deviceMemoryFileName(node.index());
    UniqueFd file(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!file) return closer(SysError{errno, "mmap BO: open " + path.string()});
    memory = MappedFile::map(file.get(), size, *offset, "mmap BO from its device memory file");
  }
  if (!memory) return closer(memory.sysError());
  return BufferObject(node, *handle, *offset, std::move(*memory));
}

Result<BufferObject> BufferObject::import(const DeviceNode& node, int dmabuf) {
  // A dma-buf's inode, like a memfd's, has the buffer's size.
  struct stat st {};
  if (::fstat(dmabuf, &st) != 0) return lastError("import dma-buf: fstat");
  if (st.st_size <= 0) return SysError{EINVAL, "import dma-buf: it is empty"};
  auto extent = static_cast<std::size_t>(st.st_size);
  // An emulated device's export is its node's memory file positioned at the BO's offset (a
  // dma-buf has no position, a memfd's is not that far): map the BO's pages there, which run to
  // the hole the emulator leaves after every BO.
  const off_t position = node.isEmulated() ? ::lseek(dmabuf, 0, SEEK_CUR) : -1;
  const bool emulatorExport = position >= static_cast<off_t>(kFirstMmapOffset);
  auto handle = node.primeFdToHandle(dmabuf);
  if (!handle) return handle.sysError();
  if (emulatorExport) {
    const off_t hole = ::lseek(dmabuf, position, SEEK_HOLE);
    const int err = errno;
    ::lseek(dmabuf, position, SEEK_SET);  // the position is the export's identity: keep it
    if (hole <= position) {
      (void)node.closeBufferHandle(*handle);
      return SysError{hole < 0 ? err : EINVAL, "import dma-buf: no BO pages at its position"};
    }
    extent = static_cast<std::size_t>(hole - position);
  }
  auto memory = MappedFile::map(dmabuf, extent, emulatorExport ? static_cast<uint64_t>(position) : 0, "mmap dma-buf");
  if (!memory) {
    (void)node.closeBufferHandle(*handle);
    return memory.sysError();
  }
  return BufferObject(node, *handle, 0, std::move(*memory));
}

BufferObject::~BufferObject() { close(); }

BufferObject& BufferObject::operator=(BufferObject&& other) noexcept {
  if (this != &other) {
    close();
    node_ = std::move(other.node_);
    handle_ = other.handle_;
    mmapOffset_ = other.mmapOffset_;
    memory_ = std::move(other.memory_);
  }
  return *this;
}

void BufferObject::close() {
  memory_ = MappedFile();
  if (auto file = node_.lock()) (void)drmCloseBufferHandle(file->get(), handle_);
  node_.reset();
}

}  // namespace qaic::driver
