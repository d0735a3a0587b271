// SPDX-License-Identifier: Apache-2.0
// A DMA buffer: a buffer object of the context's open device file, mapped into the process and
// registered by its export descriptor (PRIME, DmaBuffer::fd()) so QBuffers naming it can be
// resolved; or a dma-buf descriptor a QBuffer names that was imported into a set's device (a
// buffer of another device, a memfd), which the context keeps for reuse but hands to no user.
#pragma once

#include <memory>
#include <mutex>

#include <qaic/QBuffer.hpp>

#include "driver/BufferObject.hpp"
#include "driver/DeviceNode.hpp"

namespace qaic::rt {

class ContextImpl;

class DmaBufferImpl final : public DmaBuffer {
 public:
  // A buffer of the context: `exported` is its dma-buf descriptor, registered with `context`.
  DmaBufferImpl(std::shared_ptr<const driver::DeviceNode> node, driver::BufferObject bo, UniqueFd exported,
                std::shared_ptr<ContextImpl> context);
  // An import (BufferObject::import): no descriptor of its own, registered nowhere.
  DmaBufferImpl(std::shared_ptr<const driver::DeviceNode> node, driver::BufferObject bo);
  ~DmaBufferImpl() override;

  uint8_t* data() const override { return reinterpret_cast<uint8_t*>(bo_.data()); }
  std::size_t size() const override { return bo_.size(); }
  int fd() const override { return exported_.get(); }
  const driver::BufferObject& bufferObject() const { return bo_; }
  const driver::DeviceNode* node() const { return node_.get(); }

  // Zero copy: a BO can be sliced to one DBC in one direction (uAPI). The first activation that
  // asks slices the whole BO to itself; true when this BO is (now) sliced to `owner`'s DBC
  // activation `generation` in direction `dir`, false when it belongs elsewhere (the caller
  // then stages the data instead).
  bool attachTo(const void* owner, uint32_t generation, uint32_t dbcId, uint32_t dir);

 private:
  std::shared_ptr<const driver::DeviceNode> node_;  // the BO lives as long as its open file
  driver::BufferObject bo_;
  UniqueFd exported_;                     // -1 for an import
  std::shared_ptr<ContextImpl> context_;  // null for an import
  std::mutex attachMutex_;
  const void* attachedOwner_ = nullptr;
  uint32_t attachedGeneration_ = 0;
  uint32_t attachedDir_ = 0;
  uint32_t attachedDbc_ = 0;
};

}  // namespace qaic::rt
