// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/DmaBufferImpl.hpp"

#include "runtime/objects/ContextImpl.hpp"

namespace qaic::rt {

DmaBufferImpl::DmaBufferImpl(std::shared_ptr<const driver::DeviceNode> node, driver::BufferObject bo, UniqueFd exported,
                             std::shared_ptr<ContextImpl> context)
    : node_(std::move(node)), bo_(std::move(bo)), exported_(std::move(exported)), context_(std::move(context)) {}

DmaBufferImpl::DmaBufferImpl(std::shared_ptr<const driver::DeviceNode> node, driver::BufferObject bo)
    : node_(std::move(node)), bo_(std::move(bo)) {}

bool DmaBufferImpl::attachTo(const void* owner, uint32_t generation, uint32_t dbcId, uint32_t dir) {
  std::lock_guard lock(attachMutex_);
  if (attachedOwner_ != nullptr)
    return attachedOwner_ == owner && attachedGeneration_ == generation && attachedDir_ == dir && attachedDbc_ == dbcId;
  qaic_attach_slice_entry whole{};
  whole.size = bo_.size();
  qaic_attach_slice_hdr hdr{};
  hdr.dbc_id = dbcId;
  hdr.handle = bo_.handle();
  hdr.dir = dir;
  hdr.size = bo_.size();
  if (!node_->attachSlices(hdr, std::span(&whole, 1))) return false;
  attachedOwner_ = owner;
  attachedGeneration_ = generation;
  attachedDir_ = dir;
  attachedDbc_ = dbcId;
  return true;
}

// The BO's handle closes with bo_ (GEM_CLOSE): its memory goes back to the device once no slice
// holds it, without waiting for the context to close its node.
DmaBufferImpl::~DmaBufferImpl() {
  if (context_) context_->unregisterDmaBuffer(fd());
}

}  // namespace qaic::rt
