// SPDX-License-Identifier: Apache-2.0
// libqaic/runtime/objects: the objects behind the public classes that are interfaces, each
// named after its class (ContextImpl, InferenceSetImpl, InferenceHandleImpl,
// InferenceSetGroupImpl, ProfilingHandleImpl, DmaBufferImpl), the handle's life cycle
// (HandleState) and how driver and device codes become a QStatus (StatusCodes). This header is
// the hub: an InferenceSetImpl owns its handles, reservation, program loads and one Pipeline per
// activation. Depends on loading/ (the program's layout, loads, reservation) and datapath/ (the
// pipelines; the context's WorkerPool), on driver/ and container/. front/ depends on it, and
// datapath/ and loading/ use a few of its parts back: the context (log, device nodes, DMA
// buffers), the handle's state that the data path fills, and StatusCodes. Answers come up to a
// set only through the owner interfaces it implements (PipelineOwner, GroupMember).
//
// The implementation of one InferenceSet: its handles and their free list, the program layout,
// one Pipeline per activation, the program loads, the optional over-subscription group, and the
// profilers listening to completions. One mutex (`mutex_`) guards the free list and the handles'
// life-cycle transitions. Waits are all bounded or cancellable, and each waits on the condition
// that concerns it (a free handle, one handle's completion, the set draining), so a completion
// wakes only the thread waiting for it, not every application thread.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <qaic/InferenceSet.hpp>
#include <qaic/Qpc.hpp>

#include "runtime/datapath/Pipeline.hpp"
#include "runtime/loading/ProgramLayout.hpp"
#include "runtime/loading/ProgramLoad.hpp"
#include "runtime/loading/ResourceReservation.hpp"
#include "runtime/objects/ContextImpl.hpp"
#include "runtime/objects/HandlePool.hpp"
#include "runtime/objects/InferenceHandleImpl.hpp"
#include "runtime/objects/InferenceSetGroupImpl.hpp"
#include "runtime/objects/ProfilingHandleImpl.hpp"

namespace qaic::rt {

// One part of a multi-device program (MultiDeviceSetImpl): activation a of the part's set joins
// the peer group tokens[a] as part `part` of `parts`.
struct PeerPartPlacement {
  std::vector<uint64_t> tokens;
  uint32_t part = 0;
  uint32_t parts = 1;
};

class InferenceSetImpl final : public InferenceSet, private PipelineOwner, private GroupMember {
 public:
  InferenceSetImpl(std::shared_ptr<ContextImpl> context, std::shared_ptr<Qpc> qpc, QID device, uint32_t setSize,
                   uint32_t numActivations, const InferenceSetProperties& properties,
                   std::optional<PeerPartPlacement> peer = std::nullopt);
  ~InferenceSetImpl() override;

  // Handles of one set (setSize x numActivations) at most: each owns staging buffer objects.
  static constexpr uint64_t kMaxHandles = 65536;

  // InferenceSet
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

  void addProfiler(const std::shared_ptr<ProfilingHandleImpl::State>& profiler);
  void removeProfiler(const ProfilingHandleImpl::State* profiler);

 private:
  // PipelineOwner
  bool admit(AdmitTicket& ticket) override;
  void forget(AdmitTicket& ticket) override;
  void release() override;
  void finished(InferenceHandleImpl& handle, QStatus status, const std::string& message) override;

  // GroupMember (and the set's own activation when it has no group)
  const std::string& name() const override { return name_; }
  QID device() const override { return device_; }
  std::chrono::milliseconds inferenceBound() const override;
  void loadPrograms() override;
  void activate() override;
  void deactivate() override;
  void wakeParked() override;
  void log(QLogLevel level, const std::string& message) const override { context_->log(level, message); }

  void submitHandle(const shInferenceHandle& handle, uint64_t requestId, NotifyFn notifyFn, void* userData,
                    bool viaNotify);
  InferenceHandleImpl& own(const shInferenceHandle& handle, const char* operation) const;
  Pipeline& pipelineOf(const InferenceHandleImpl& handle) const;
  // getAvailable's wait: the first free handle, or the first of `activation`.
  QStatus acquireAvailable(shInferenceHandle& handle, uint64_t timeoutUs, std::optional<uint32_t> activation);
  void checkActivation(const char* call, uint32_t activation) const;  // throws QS_INVAL naming `call`
  // Waits on `cv` until `done` or the timeout (0: until done or shutdown). Lock held.
  template <typename Predicate>
  bool waitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs, Predicate done);
  // waitFor for one handle's completion: when no other thread of the handle's activation does,
  // this thread waits on the device's interrupt itself (InterruptLeader), else on the handle's
  // `completed`. Lock held.
  // The polling data path: spins (bounded, adaptive) until `handle` completes, draining the
  // responses it sees on the way. Lock not held.
  void spinForHandle(InferenceHandleImpl& handle, RequestRing& ring, driver::DbcWindow& window,
                     Clock::time_point deadline);
  bool shuttingDown() const { return shuttingDownFlag_.load(std::memory_order_relaxed); }
  template <typename Predicate>
  bool waitForHandle(InferenceHandleImpl& handle, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs,
                     Predicate done);
  void shutdown();

  std::shared_ptr<ContextImpl> context_;
  std::shared_ptr<Qpc> qpc_;
  const QID device_;
  const uint32_t setSize_;
  const uint32_t numActivations_;
  const InferenceSetProperties properties_;
  const std::optional<PeerPartPlacement> peer_;
  std::string name_;
  uint32_t id_;
  ProgramLayout layout_;
  std::shared_ptr<InferenceSetGroupImpl> group_;

  std::unique_ptr<ResourceReservation> reservation_;  // null for a group member; released last
  std::map<QID, std::unique_ptr<ProgramLoad>> loads_;
  std::vector<std::unique_ptr<Pipeline>> pipelines_;
  HandlePool handles_;  // guarded by mutex_ once the constructor has built it

  mutable std::mutex mutex_;
  std::condition_variable availableChanged_;  // a handle was put back
  std::condition_variable changed_;           // the set drained, shuts down, or (anyWaiters_) any completion
  std::size_t anyWaiters_ = 0;                // getCompletedId callers waiting on changed_
  std::vector<bool> resetPending_;            // by activation: the next submission there resets its state
  std::size_t inFlight_ = 0;
  bool shuttingDown_ = false;
  std::atomic<bool> shuttingDownFlag_{false};  // shuttingDown_ for threads without the lock

  std::mutex profilerMutex_;
  std::vector<std::weak_ptr<ProfilingHandleImpl::State>> profilers_;
};

}  // namespace qaic::rt
