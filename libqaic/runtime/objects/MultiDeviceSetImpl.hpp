// SPDX-License-Identifier: Apache-2.0
// The InferenceSet of a multi-device program (container version 4; docs/runtime.md,
// "Multi-device programs"): one InferenceSetImpl per part, on its own card
// (choosePartDevices), each reserving its part's resources there and activating activation a as
// part p of N of the peer group tokens[a] (docs/emulator.md, "Multi-device programs"). Built
// part after part: a part that fails destroys the parts already up, which deactivates them.
//
// Its handles are its own (InferenceHandleImpl over part 0's layout: the outer container's IO is
// part 0's). An inference takes a handle of the same activation from every part, gives each part
// the user's buffers of the inputs it declares (replicated inputs are the same bytes, read in
// place or staged by each part's pipeline), part 0 the user's outputs and the other parts scratch
// for theirs, submits on every card with a callback, and completes when the last part did. A part
// that fails fails the inference naming its device; the emulator breaks the group, so the other
// parts fail at once rather than hang. Retained state stays in each card's activation.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <qaic/InferenceSet.hpp>
#include <qaic/Qpc.hpp>

#include "runtime/loading/ProgramLayout.hpp"
#include "runtime/objects/ContextImpl.hpp"
#include "runtime/objects/HandlePool.hpp"
#include "runtime/objects/InferenceHandleImpl.hpp"
#include "runtime/objects/InferenceSetImpl.hpp"

namespace qaic::rt {

class MultiDeviceSetImpl final : public InferenceSet {
 public:
  // `device` is unused: the parts' devices are choosePartDevices'. Throws Error as
  // InferenceSet::Factory does, naming the part and device that refused.
  MultiDeviceSetImpl(std::shared_ptr<ContextImpl> context, std::shared_ptr<Qpc> qpc, uint32_t setSize,
                     uint32_t numActivations, const InferenceSetProperties& properties);
  ~MultiDeviceSetImpl() override;

  QStatus getAvailable(shInferenceHandle& handle, uint64_t timeoutUs) override;
  QStatus getAvailableOnActivation(uint32_t activation, shInferenceHandle& handle, uint64_t timeoutUs) override;
  void resetRetainedState(uint32_t activation) override;
  void submit(const shInferenceHandle& handle, uint64_t requestId) override;
  void submit(const shInferenceHandle& handle, NotifyFn notifyFn, void* userData) override;
  QStatus getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs) override;
  void putCompleted(const shInferenceHandle& handle) override;
  QStatus waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs) override;
  QStatus waitForCompletion(uint64_t timeoutUs) override;
  std::shared_ptr<DmaBuffer> allocateDmaBuffer(std::size_t size) override;
  const std::string& getName() const override { return name_; }
  uint32_t getId() const override { return id_; }
  uint32_t getNumActivations() const override { return numActivations_; }
  uint32_t getSetSize() const override { return setSize_; }

  // The device of each part, part 0 first.
  const std::vector<QID>& partDevices() const { return devices_; }

 private:
  struct Part {
    QID device = 0;
    std::shared_ptr<Qpc> qpc;
    ProgramLayout layout;
    // By the part's buffer index: the index of the set's buffer of that name, or -1 for an
    // output only this part has (written to scratch).
    std::vector<int> setIndex;
    std::vector<std::size_t> fullBytes;  // by the part's buffer index: user bytes at full dims
    uint64_t sentBytes = 0;              // to other cards per inference (the container's figure)
    std::unique_ptr<InferenceSetImpl> set;
  };
  // One handle's inference across the parts.
  struct Flight {
    uint32_t remaining = 0;
    std::vector<QStatus> status;  // by part
    std::vector<std::string> message;
    std::vector<std::vector<std::vector<std::byte>>> scratch;  // by part, by the part's buffer index
    TransferCounts transfers;                                  // summed over the parts so far
  };
  // What a part's handle said when its inference ended (read before the handle goes back).
  struct PartOutcome {
    QStatus status = QS_SUCCESS;
    std::string message;
    StageDurations stages{};
    std::vector<IoDims> outputDims;
    TransferCounts transfers{};
  };

  void buildParts(const std::vector<QID>& devices, std::vector<std::shared_ptr<Qpc>> qpcs);
  void submitHandle(const shInferenceHandle& handle, uint64_t requestId, NotifyFn notifyFn, void* userData,
                    bool viaNotify);
  // Gives part `p` the handle's buffers and submits it; the part's callback reports to partEnded.
  void submitPart(InferenceHandleImpl& h, std::size_t p, bool resetState);
  // A part's inference ended (or never started): the last one completes the handle.
  void partEnded(InferenceHandleImpl& h, std::size_t p, const PartOutcome& outcome);
  InferenceHandleImpl& own(const shInferenceHandle& handle, const char* operation) const;
  void checkActivation(const char* call, uint32_t activation) const;
  QStatus acquire(shInferenceHandle& handle, uint64_t timeoutUs, std::optional<uint32_t> activation);
  template <typename Predicate>
  bool waitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs, Predicate done);
  void shutdown();

  std::shared_ptr<ContextImpl> context_;
  std::shared_ptr<Qpc> qpc_;
  const uint32_t setSize_;
  const uint32_t numActivations_;
  const InferenceSetProperties properties_;
  std::string name_;
  uint32_t id_;
  std::vector<QID> devices_;
  std::vector<Part> parts_;
  HandlePool handles_;           // guarded by mutex_ once the constructor has built it
  std::vector<Flight> flights_;  // by handle index

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a handle completed or was put back, or the set shuts down
  std::vector<bool> resetPending_;   // by activation
  std::size_t inFlight_ = 0;
  bool shuttingDown_ = false;
};

}  // namespace qaic::rt
