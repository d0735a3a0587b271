#include <qaic/InferenceSet.hpp>

#include "ContextImpl.hpp"
#include "SetImpl.hpp"

namespace qaic::rt {

std::shared_ptr<InferenceSet> InferenceSet::Factory(std::shared_ptr<Context> context,
                                                    std::shared_ptr<Qpc> qpc, QID device,
                                                    uint32_t setSize, uint32_t numActivations,
                                                    const InferenceSetProperties* properties) {
  const InferenceSetProperties defaults;
  auto impl = std::make_unique<engine::SetImpl>(std::move(context), std::move(qpc), device, setSize,
                                                numActivations, properties ? *properties : defaults);
  return std::make_shared<InferenceSet>(std::move(impl));
}

InferenceSet::InferenceSet(std::unique_ptr<engine::SetImpl> impl) : impl_(std::move(impl)) {}
InferenceSet::~InferenceSet() = default;

QStatus InferenceSet::getAvailable(shInferenceHandle& handle, uint64_t timeoutUs) {
  return impl_->getAvailable(handle, timeoutUs);
}
void InferenceSet::submit(const shInferenceHandle& handle, uint64_t requestId) {
  impl_->submit(handle, requestId, nullptr, nullptr, false);
}
void InferenceSet::submit(const shInferenceHandle& handle, NotifyFn notifyFn, void* userData) {
  impl_->submit(handle, 0, std::move(notifyFn), userData, true);
}
QStatus InferenceSet::getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs) {
  return impl_->getCompletedId(handle, requestId, timeoutUs);
}
void InferenceSet::putCompleted(const shInferenceHandle& handle) { impl_->putCompleted(handle); }
QStatus InferenceSet::waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs) {
  return impl_->waitForCompletion(handle, timeoutUs);
}
QStatus InferenceSet::waitForCompletion(uint64_t timeoutUs) { return impl_->waitForCompletion(timeoutUs); }

std::shared_ptr<DmaBuffer> InferenceSet::allocateDmaBuffer(std::size_t size) {
  // The set's Context is the owner of DMA buffers; the set only picks its device.
  return const_cast<Context&>(impl_->publicContext()).allocateDmaBuffer(impl_->device(), size);
}

const std::string& InferenceSet::getName() const { return impl_->name(); }
uint32_t InferenceSet::getId() const { return impl_->id(); }
uint32_t InferenceSet::getNumActivations() const { return impl_->numActivations(); }
uint32_t InferenceSet::getSetSize() const { return impl_->setSize(); }

}  // namespace qaic::rt
