#include "driver/BufferObject.hpp"

namespace qaic::driver {

Result<BufferObject> BufferObject::create(const DeviceNode& node, std::size_t size) {
  auto handle = node.createBo(size);
  if (!handle) return handle.sysError();
  auto offset = node.mmapBo(*handle);
  if (!offset) return offset.sysError();
  auto memory = node.isEmulated() ? MappedFile::open(node.shmDir() / boFileName(*offset), size)
                                  : MappedFile::map(node.fd(), size, *offset, "mmap BO");
  if (!memory) return memory.sysError();
  return BufferObject(*handle, *offset, std::move(*memory));
}

}  // namespace qaic::driver
