// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/HandlePool.hpp"

#include <algorithm>
#include <mutex>

#include <qaic/Errors.hpp>

namespace qaic::rt {

void HandlePool::add(std::shared_ptr<InferenceHandleImpl> handle) {
  free_.push_back(static_cast<uint32_t>(handles_.size()));
  handles_.push_back(std::move(handle));
}

std::deque<uint32_t>::const_iterator HandlePool::firstFree(std::optional<uint32_t> activation) const {
  return std::find_if(free_.begin(), free_.end(),
                      [&](uint32_t index) { return !activation || handles_[index]->activation() == *activation; });
}

bool HandlePool::hasFree(std::optional<uint32_t> activation) const { return firstFree(activation) != free_.end(); }

std::shared_ptr<InferenceHandleImpl> HandlePool::take(std::optional<uint32_t> activation) {
  const auto it = firstFree(activation);
  const std::shared_ptr<InferenceHandleImpl>& handle = handles_[*it];
  free_.erase(it);
  std::lock_guard handleLock(handle->mutex);
  handle->state.acquire();
  return handle;
}

void HandlePool::putBack(InferenceHandleImpl& handle) {
  std::lock_guard handleLock(handle.mutex);
  handle.state.put();
  free_.push_back(handle.index());
}

InferenceHandleImpl* HandlePool::findByRequestId(uint64_t requestId, bool completedOnly) const {
  // The handles' own locks are not needed to read these fields: every change of a handle's
  // state, request id and retrieval holds the set's lock too.
  for (const auto& shared : handles_) {
    InferenceHandleImpl& h = *shared;
    if (h.requestId != requestId || h.viaNotify) continue;
    const HandleState state = h.state.state();
    if (state == HandleState::Completed && !h.retrieved) return &h;
    if (!completedOnly && state == HandleState::Submitted) return &h;
  }
  return nullptr;
}

InferenceHandleImpl* HandlePool::soleWithRequestId(uint64_t requestId) const {
  InferenceHandleImpl* sole = nullptr;
  for (const auto& shared : handles_) {
    InferenceHandleImpl& h = *shared;
    if (h.requestId != requestId || h.viaNotify) continue;
    const HandleState state = h.state.state();
    if (state != HandleState::Submitted && !(state == HandleState::Completed && !h.retrieved)) continue;
    if (sole != nullptr) return nullptr;
    sole = &h;
  }
  return sole;
}

std::size_t HandlePool::putBackUnclaimed() {
  std::size_t putBack = 0;
  for (const auto& shared : handles_) {
    InferenceHandleImpl& h = *shared;
    std::lock_guard handleLock(h.mutex);
    if (h.state.state() != HandleState::Completed || h.viaNotify || h.retrieved || h.waitedFor) continue;
    h.state.put();
    free_.push_back(h.index());
    ++putBack;
  }
  return putBack;
}

InferenceHandleImpl& ownHandle(const shInferenceHandle& handle, const void* owner, const std::string& setName,
                               const char* operation) {
  if (!handle) throw Error(QS_INVAL, std::string(operation) + ": null inference handle");
  auto* impl = dynamic_cast<InferenceHandleImpl*>(handle.get());
  if (impl == nullptr || impl->owner() != owner)
    throw Error(QS_WRONG_SET, std::string(operation) + ": the inference handle belongs to another InferenceSet, not '" +
                                  setName + "'");
  return *impl;
}

void checkActivationIndex(const char* call, const std::string& setName, uint32_t activation, uint32_t numActivations) {
  if (activation >= numActivations)
    throw Error(QS_INVAL, std::string(call) + ": InferenceSet '" + setName + "' has " + std::to_string(numActivations) +
                              " activation(s), not " + std::to_string(activation + 1));
}

}  // namespace qaic::rt
