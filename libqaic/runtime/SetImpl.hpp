// The implementation of one InferenceSet: its handles and their free list, the program layout,
// one ActivationQueue per activation, the program loads, the optional over-subscription group,
// and the profilers listening to completions. One mutex (`mutex_`) guards the free list and the
// handles' life-cycle transitions. Waits are all bounded or cancellable, and each waits on the
// condition that concerns it (a free handle, one handle's completion, the set draining), so a
// completion wakes only the thread waiting for it, not every application thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <qaic/InferenceSet.hpp>
#include <qaic/InferenceSetGroup.hpp>
#include <qaic/ProfilingHandle.hpp>
#include <qaic/Qpc.hpp>

#include "ActivationQueue.hpp"
#include "HandleImpl.hpp"
#include "ProgramLayout.hpp"
#include "ProgramLoad.hpp"

namespace qaic::rt::engine {

class ContextImpl;

class SetImpl {
 public:
  SetImpl(std::shared_ptr<Context> context, std::shared_ptr<Qpc> qpc, QID device, uint32_t setSize,
          uint32_t numActivations, const InferenceSetProperties& properties);
  ~SetImpl();
  SetImpl(const SetImpl&) = delete;
  SetImpl& operator=(const SetImpl&) = delete;

  ContextImpl& context() const;
  const Context& publicContext() const { return *context_; }
  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  uint32_t setSize() const { return setSize_; }
  uint32_t numActivations() const { return numActivations_; }
  QID device() const { return device_; }

  QStatus getAvailable(shInferenceHandle& handle, uint64_t timeoutUs);
  void submit(const shInferenceHandle& handle, uint64_t requestId, NotifyFn notifyFn, void* userData,
              bool viaNotify);
  QStatus getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs);
  void putCompleted(const shInferenceHandle& handle);
  QStatus waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs);
  QStatus waitForCompletion(uint64_t timeoutUs);

  // Pipeline hooks (ActivationQueue): every request admitted ends with one release().
  bool tryAdmit(AdmitTicket& ticket);
  void forget(AdmitTicket& ticket);
  void release();
  void wakeParked();  // the group changed: retry parked submissions
  void finished(HandleImpl& handle, QStatus status, const std::string& message);

  // Group hooks (GroupImpl, under its lock).
  void loadPrograms();
  void activateQueues();
  void deactivateQueues();

  void addProfiler(const std::shared_ptr<ProfilingHandle::State>& profiler);
  void removeProfiler(const ProfilingHandle::State* profiler);

  // The longest one inference can take: every try of the data path plus slack.
  std::chrono::milliseconds inferenceBound() const;

 private:
  HandleImpl& own(const shInferenceHandle& handle, const char* operation) const;
  ActivationQueue& queueOf(const HandleImpl& handle) const;
  // Waits on `cv` until `done` or the timeout (0: until done or shutdown). Lock held.
  template <typename Predicate>
  bool waitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs,
               Predicate done);
  // waitFor for one handle's completion: when no other thread of the handle's queue does, this
  // thread waits on the device's interrupt itself (InterruptLeader), else on the handle's
  // `completed`. Lock held.
  template <typename Predicate>
  bool waitForHandle(HandleImpl& handle, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs, Predicate done);
  // The handle a getCompletedId(requestId) caller can wait on alone, or nullptr when several
  // handles carry that id (the caller then waits for any completion). Lock held.
  HandleImpl* soleCandidate(uint64_t requestId) const;
  void shutdown();

  std::shared_ptr<Context> context_;
  std::shared_ptr<Qpc> qpc_;
  const QID device_;
  const uint32_t setSize_;
  const uint32_t numActivations_;
  const InferenceSetProperties properties_;
  std::string name_;
  uint32_t id_;
  ProgramLayout layout_;
  std::shared_ptr<InferenceSetGroup> group_;

  std::map<QID, std::unique_ptr<ProgramLoad>> loads_;
  std::vector<std::unique_ptr<ActivationQueue>> queues_;
  std::vector<shInferenceHandle> handles_;

  mutable std::mutex mutex_;
  std::condition_variable availableChanged_;  // a handle was put back
  std::condition_variable changed_;           // the set drained, shuts down, or (anyWaiters_) any completion
  std::size_t anyWaiters_ = 0;                // getCompletedId callers waiting on changed_
  std::deque<uint32_t> available_;
  std::size_t inFlight_ = 0;
  bool shuttingDown_ = false;

  std::mutex profilerMutex_;
  std::vector<std::weak_ptr<ProfilingHandle::State>> profilers_;
};

}  // namespace qaic::rt::engine
