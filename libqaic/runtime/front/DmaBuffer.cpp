// SPDX-License-Identifier: Apache-2.0
#include <qaic/Errors.hpp>
#include <qaic/QBuffer.hpp>

#include <string>

namespace qaic::rt {

QBuffer DmaBuffer::qbuffer(std::size_t offset, std::size_t bytes) const {
  if (offset > size() || (bytes != 0 && bytes > size() - offset))
    throw Error(QS_INVAL, "DMA buffer of " + std::to_string(size()) + " bytes has no range [" + std::to_string(offset) +
                              ", +" + std::to_string(bytes) + ")");
  QBuffer buffer;
  buffer.type = QBUFFER_TYPE_DMABUF;
  buffer.handle = fd();
  buffer.offset = offset;
  buffer.size = bytes == 0 ? size() - offset : bytes;
  buffer.buf = data() + offset;
  return buffer;
}

}  // namespace qaic::rt
