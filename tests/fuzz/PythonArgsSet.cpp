// SPDX-License-Identifier: Apache-2.0
#include "PythonArgsSet.hpp"

#include <cstdlib>
#include <cstring>

namespace qaic::fuzz {

using rt::Error;
using rt::HandleState;

HeapDmaBuffer::HeapDmaBuffer(std::size_t size)
    : data_(static_cast<uint8_t*>(std::malloc(size == 0 ? 1 : size))), size_(size) {
  std::memset(data_, 0, size_);
}

HeapDmaBuffer::~HeapDmaBuffer() { std::free(data_); }

DevicelessSet::DevicelessSet(rt::ProgramLayout layout, uint32_t setSize) : layout_(std::move(layout)) {
  for (uint32_t i = 0; i < setSize; ++i)
    handles_.push_back(std::make_shared<rt::InferenceHandleImpl>(this, layout_, i, 0));
}

std::size_t DevicelessSet::handlesOut() const {
  std::lock_guard lock(mutex_);
  std::size_t out = 0;
  for (const auto& h : handles_) out += h->state.state() != HandleState::Available;
  return out;
}

rt::InferenceHandleImpl& DevicelessSet::own(const rt::shInferenceHandle& handle, const char* operation) const {
  auto* impl = dynamic_cast<rt::InferenceHandleImpl*>(handle.get());
  if (impl == nullptr || impl->owner() != this)
    throw Error(rt::QS_WRONG_SET, std::string(operation) + ": the handle is not one of this set's");
  return *impl;
}

void DevicelessSet::checkActivation(uint32_t activation, const char* operation) const {
  if (activation != 0)
    throw Error(rt::QS_INVAL, std::string(operation) + ": the set has 1 activation, not " + std::to_string(activation));
}

rt::QStatus DevicelessSet::getAvailable(rt::shInferenceHandle& handle, uint64_t) {
  std::lock_guard lock(mutex_);
  handle.reset();
  for (const auto& h : handles_) {
    if (h->state.state() != HandleState::Available) continue;
    h->state.acquire();
    handle = h;
    return rt::QS_SUCCESS;
  }
  return rt::QS_TIMEDOUT;  // no other thread could put one back: a wait would never end
}

rt::QStatus DevicelessSet::getAvailableOnActivation(uint32_t activation, rt::shInferenceHandle& handle,
                                                    uint64_t timeoutUs) {
  checkActivation(activation, "getAvailableOnActivation");
  return getAvailable(handle, timeoutUs);
}

void DevicelessSet::resetRetainedState(uint32_t activation) { checkActivation(activation, "resetRetainedState"); }

void DevicelessSet::submit(const rt::shInferenceHandle& handle, uint64_t requestId) {
  std::lock_guard lock(mutex_);
  rt::InferenceHandleImpl& h = own(handle, "submit");
  h.state.requireAcquired("submit");
  std::vector<rt::IoSetEntry> entries(layout_.buffers.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].present = !h.skipped[i];
    entries[i].dims = h.dims[i];
    entries[i].bytes = h.buffers[i].size;
    if (entries[i].present && h.buffers[i].buf == nullptr && h.buffers[i].size != 0)
      throw Error(rt::QS_INVAL, "submit: buffer '" + layout_.buffers[i].name + "' was not set (null pointer)");
  }
  const rt::IoSetShape shape = rt::validateIoSet(layout_.rules, entries);
  // The device's part: every byte of every input read, every byte of every output written.
  volatile uint8_t sink = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const rt::QBuffer& b = h.buffers[i];
    if (!entries[i].present) continue;
    for (std::size_t k = 0; k < b.size; ++k) {
      if (layout_.buffers[i].isInput)
        sink = sink ^ b.buf[k];
      else
        b.buf[k] = outputPattern(k);
    }
  }
  h.requestId = requestId;
  h.submittedDims = shape.dims;
  h.state.submit();
  h.status = rt::QS_SUCCESS;
  h.errorMessage.clear();
  h.outputDims = shape.dims;
  h.state.complete();
}

void DevicelessSet::submit(const rt::shInferenceHandle& handle, rt::NotifyFn, void*) {
  std::lock_guard lock(mutex_);
  own(handle, "submit");
  throw Error(rt::QS_INVAL, "submit: the python_args harness runs no notify callbacks");
}

rt::QStatus DevicelessSet::getCompletedId(rt::shInferenceHandle& handle, uint64_t requestId, uint64_t) {
  std::lock_guard lock(mutex_);
  handle.reset();
  for (const auto& h : handles_) {
    if (h->state.state() != HandleState::Completed || h->requestId != requestId) continue;
    handle = h;
    return h->status;
  }
  throw Error(rt::QS_INVAL, "getCompletedId: no inference with requestId " + std::to_string(requestId));
}

void DevicelessSet::putCompleted(const rt::shInferenceHandle& handle) {
  std::lock_guard lock(mutex_);
  own(handle, "putCompleted").state.put();
}

rt::QStatus DevicelessSet::waitForCompletion(const rt::shInferenceHandle& handle, uint64_t) {
  std::lock_guard lock(mutex_);
  rt::InferenceHandleImpl& h = own(handle, "waitForCompletion");
  if (h.state.state() != HandleState::Completed)
    throw Error(rt::QS_WRONG_STATE, "waitForCompletion: the handle was not submitted");
  return h.status;
}

rt::QStatus DevicelessSet::waitForCompletion(uint64_t) { return rt::QS_SUCCESS; }

std::shared_ptr<rt::DmaBuffer> DevicelessSet::allocateDmaBuffer(std::size_t size) {
  std::lock_guard lock(mutex_);
  if (size > (1u << 20)) throw Error(rt::QS_NO_RESOURCES, "allocateDmaBuffer: the harness allocates up to 1 MiB");
  return std::make_shared<HeapDmaBuffer>(size);
}

}  // namespace qaic::fuzz
