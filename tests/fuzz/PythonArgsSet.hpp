// SPDX-License-Identifier: Apache-2.0
// What the python_args target drives the qaicrt bindings against in place of a device: an
// InferenceSet whose handles are the runtime's own InferenceHandleImpl (its state machine and the
// buffer-count and index checks the bindings rely on), whose submit() runs the runtime's IO-set
// check (validateIoSet) and then plays the device's part on the user's memory: it reads every
// input byte and writes a pattern into every output byte, through the QBuffers the bindings made,
// so ASan sees any QBuffer that is larger than its object's memory. DMA buffers are exact-size
// heap blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <qaic/InferenceSet.hpp>

#include "runtime/loading/ProgramLayout.hpp"
#include "runtime/objects/InferenceHandleImpl.hpp"

namespace qaic::fuzz {

// The byte the device writes at output offset i.
inline uint8_t outputPattern(std::size_t i) { return static_cast<uint8_t>(0xa5 ^ (i * 7)); }

class HeapDmaBuffer final : public rt::DmaBuffer {
 public:
  explicit HeapDmaBuffer(std::size_t size);
  ~HeapDmaBuffer() override;
  uint8_t* data() const override { return data_; }
  std::size_t size() const override { return size_; }
  int fd() const override { return -1; }

 private:
  uint8_t* data_;
  std::size_t size_;
};

class DevicelessSet final : public rt::InferenceSet {
 public:
  DevicelessSet(rt::ProgramLayout layout, uint32_t setSize);

  rt::QStatus getAvailable(rt::shInferenceHandle& handle, uint64_t timeoutUs) override;
  rt::QStatus getAvailableOnActivation(uint32_t activation, rt::shInferenceHandle& handle, uint64_t timeoutUs) override;
  void resetRetainedState(uint32_t activation) override;
  void submit(const rt::shInferenceHandle& handle, uint64_t requestId) override;
  void submit(const rt::shInferenceHandle& handle, rt::NotifyFn notifyFn, void* userData) override;
  rt::QStatus getCompletedId(rt::shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs) override;
  void putCompleted(const rt::shInferenceHandle& handle) override;
  rt::QStatus waitForCompletion(const rt::shInferenceHandle& handle, uint64_t timeoutUs) override;
  rt::QStatus waitForCompletion(uint64_t timeoutUs) override;
  std::shared_ptr<rt::DmaBuffer> allocateDmaBuffer(std::size_t size) override;
  const std::string& getName() const override { return name_; }
  uint32_t getId() const override { return 0; }
  uint32_t getNumActivations() const override { return 1; }
  uint32_t getSetSize() const override { return static_cast<uint32_t>(handles_.size()); }

  const rt::ProgramLayout& layout() const { return layout_; }
  const std::vector<std::shared_ptr<rt::InferenceHandleImpl>>& handles() const { return handles_; }
  // Handles given out and not put back.
  std::size_t handlesOut() const;

 private:
  rt::InferenceHandleImpl& own(const rt::shInferenceHandle& handle, const char* operation) const;
  void checkActivation(uint32_t activation, const char* operation) const;

  // The bindings call from several threads at once (_keepBusy): every call holds it.
  mutable std::recursive_mutex mutex_;
  rt::ProgramLayout layout_;
  std::vector<std::shared_ptr<rt::InferenceHandleImpl>> handles_;
  std::string name_ = "python_args";
};

}  // namespace qaic::fuzz
