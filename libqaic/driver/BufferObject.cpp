// SPDX-License-Identifier: Apache-2.0
#include "driver/BufferObject.hpp"

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
  auto memory = node.isEmulated() ? MappedFile::open(node.shmDir() / boFileName(*offset), size)
                                  : MappedFile::map(node.fd(), size, *offset, "mmap BO");
  if (!memory) return closer(memory.sysError());
  return BufferObject(node, *handle, *offset, std::move(*memory));
}

Result<BufferObject> BufferObject::import(const DeviceNode& node, int dmabuf) {
  // A dma-buf's inode, like a memfd's, has the buffer's size.
  struct stat st {};
  if (::fstat(dmabuf, &st) != 0) return lastError("import dma-buf: fstat");
  if (st.st_size <= 0) return SysError{EINVAL, "import dma-buf: it is empty"};
  const auto end = static_cast<std::size_t>(st.st_size);
  auto handle = node.primeFdToHandle(dmabuf);
  if (!handle) return handle.sysError();
  auto memory = MappedFile::map(dmabuf, end, 0, "mmap dma-buf");
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
