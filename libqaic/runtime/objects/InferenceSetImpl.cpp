// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/InferenceSetImpl.hpp"

#include <fcntl.h>

#include <algorithm>

#include "runtime/loading/QAicQpcObj.hpp"

namespace qaic::rt {
namespace {

const container::QpcImage& imageOf(const Qpc& qpc) {
  const QAicQpcObj* obj = qpc.get();
  if (obj == nullptr || obj->image == nullptr) throw Error(QS_INVAL, "InferenceSet: the Qpc has no program container");
  return *obj->image;
}

uint32_t ringElements(uint32_t setSize, uint32_t elementsPerRequest) {
  // Room for every handle's request plus one retry of each, so uploads never wait for room.
  const uint64_t wanted = uint64_t{setSize} * elementsPerRequest * 2 + 1;
  return static_cast<uint32_t>(std::clamp<uint64_t>(wanted, driver::kDefaultQueueSize, driver::kMaxQueueSize));
}

}  // namespace

InferenceSetImpl::InferenceSetImpl(std::shared_ptr<ContextImpl> context, std::shared_ptr<Qpc> qpc, QID device,
                                   uint32_t setSize, uint32_t numActivations, const InferenceSetProperties& properties,
                                   std::optional<PeerPartPlacement> peer)
    : context_(std::move(context)),
      qpc_(std::move(qpc)),
      device_(device),
      setSize_(setSize),
      numActivations_(numActivations),
      properties_(properties),
      peer_(std::move(peer)),
      name_(properties.name.empty() ? "InferenceSet" : properties.name),
      id_(properties.id),
      group_(InferenceSetGroupImpl::of(properties.inferenceSetGroup)) {
  if (!qpc_) throw Error(QS_INVAL, "InferenceSet::Factory: null Qpc");
  if (setSize == 0) throw Error(QS_INVAL, "InferenceSet '" + name_ + "': setSize must be at least 1");
  if (numActivations == 0) throw Error(QS_INVAL, "InferenceSet '" + name_ + "': numActivations must be at least 1");
  if (group_ && numActivations != 1)
    throw Error(QS_INVAL, "InferenceSet '" + name_ + "': a member of InferenceSetGroup '" + group_->getName() +
                              "' must have numActivations 1, not " + std::to_string(numActivations));
  const ProgramProperties& program = properties_.programProperties;
  if (program.dataPathTimeoutMs > 3600u * 1000u)
    throw Error(QS_INVAL, "InferenceSet '" + name_ + "': dataPathTimeoutMs " +
                              std::to_string(program.dataPathTimeoutMs) + " is over an hour");
  if (properties_.queueProperties.numThreadsPerQueue > 256)
    throw Error(QS_INVAL, "InferenceSet '" + name_ + "': numThreadsPerQueue " +
                              std::to_string(properties_.queueProperties.numThreadsPerQueue) + " exceeds 256");

  const container::QpcImage& image = imageOf(*qpc_);
  // A multi-device program is MultiDeviceSetImpl's, which makes one set like this per part.
  if (image.deviceCount() > 1)
    throw Error(QS_INCOMPATIBLE, "InferenceSet '" + name_ + "': " + image.sourceName() + " spans " +
                                     std::to_string(image.deviceCount()) +
                                     " devices; create it with InferenceSet::Factory");
  if (peer_ && group_)
    throw Error(QS_INVAL, "InferenceSet '" + name_ +
                              "': a part of a multi-device program cannot be a member of "
                              "InferenceSetGroup '" +
                              group_->getName() + "'");
  layout_ = makeProgramLayout(image, 0, shapeRules(qpc_->getBufferMappingsV2()));

  std::vector<QID> placement = program.devMapping.empty() ? std::vector<QID>{device} : program.devMapping;
  for (QID d : placement) context_->device(d);  // throws for a device outside the context

  // The devices' resources first: a set they cannot hold is refused before it costs a thread,
  // a buffer object or a pipeline, whatever numActivations says. A group member's activations
  // take turns on the group's share instead (InferenceSetGroupImpl).
  if (!group_) {
    std::map<QID, uint32_t> perDevice;
    for (std::size_t i = 0; i < placement.size(); ++i) {
      const uint32_t count = numActivations / placement.size() + (i < numActivations % placement.size() ? 1 : 0);
      if (count > 0) perDevice[placement[i]] += count;
    }
    reservation_ = std::make_unique<ResourceReservation>(*context_, image, 0, perDevice,
                                                         "InferenceSet '" + name_ + "'");
  }
  if (uint64_t{setSize} * numActivations > kMaxHandles)
    throw Error(QS_INVAL, "InferenceSet '" + name_ + "': setSize " + std::to_string(setSize) + " x numActivations " +
                              std::to_string(numActivations) + " handles exceed " + std::to_string(kMaxHandles));

  PipelineConfig config;
  config.threads = std::max<uint32_t>(1, properties_.queueProperties.numThreadsPerQueue);
  config.zeroCopy = !group_;
  config.inlineSmallRequests = !group_;
  config.ring.timeout = std::chrono::milliseconds(program.dataPathTimeoutMs == 0 ? 5000 : program.dataPathTimeoutMs);
  config.ring.retries = program.submitNumRetries;
  config.ring.queueSize = ringElements(setSize, layout_.elementsPerRequest);
  config.ring.leadable = !group_;

  for (uint32_t a = 0; a < numActivations; ++a) {
    const QID d = placement[a % placement.size()];
    PipelineConfig activationConfig = config;
    if (peer_) activationConfig.ring.peer = driver::PeerGroupPart{peer_->tokens.at(a), peer_->part, peer_->parts};
    pipelines_.push_back(std::make_unique<Pipeline>(static_cast<PipelineOwner&>(*this), *context_, name_, a, d,
                                                    context_->device(d), layout_, activationConfig));
  }
  for (uint32_t i = 0; i < setSize * numActivations; ++i) {
    const uint32_t activation = i / setSize;
    auto handle = std::make_shared<InferenceHandleImpl>(this, layout_, i, activation);
    pipelines_[activation]->addHandle(*handle);
    handles_.add(std::move(handle));
  }
  resetPending_.assign(numActivations, false);

  if (group_) {
    group_->addMember(*this);  // throws when the group is enabled (constraint 3)
  } else {
    loadPrograms();
    activate();
  }
  context_->log(QL_INFO, "InferenceSet '" + name_ + "': " + std::to_string(numActivations) + " activation(s) x " +
                             std::to_string(setSize) + " handle(s)");
}

InferenceSetImpl::~InferenceSetImpl() { shutdown(); }

void InferenceSetImpl::shutdown() {
  {
    std::unique_lock lock(mutex_);
    shuttingDown_ = true;
    shuttingDownFlag_.store(true);
    changed_.notify_all();
    availableChanged_.notify_all();
    for (const auto& handle : handles_.all()) handle->completed.notify_all();
    for (const auto& pipeline : pipelines_) pipeline->ring().interruptLeader().wake();
    // Give what is in flight its chance to finish; anything left is cancelled by the pipelines.
    const auto bound = inferenceBound();
    changed_.wait_for(lock, bound, [&] { return inFlight_ == 0; });
  }
  for (auto& pipeline : pipelines_) pipeline->shutdown();
  if (group_) group_->removeMember(*this);
  for (auto& pipeline : pipelines_) pipeline->deactivate();
  pipelines_.clear();
  loads_.clear();
  reservation_.reset();  // after every activation drawing from it was deactivated
}

std::chrono::milliseconds InferenceSetImpl::inferenceBound() const {
  const auto& p = properties_.programProperties;
  const uint64_t timeout = p.dataPathTimeoutMs == 0 ? 5000 : p.dataPathTimeoutMs;
  return std::chrono::milliseconds(timeout * (uint64_t{p.submitNumRetries} + 1) + 1000);
}

void InferenceSetImpl::loadPrograms() {
  const auto container = std::as_bytes(std::span<const uint8_t>(qpc_->buffer(), qpc_->size()));
  for (const auto& pipeline : pipelines_) {
    if (loads_.count(pipeline->device())) continue;
    loads_.emplace(pipeline->device(),
                   std::make_unique<ProgramLoad>(context_->device(pipeline->device()), context_->nextLoadId(),
                                                 container, "InferenceSet '" + name_ + "'"));
  }
}

void InferenceSetImpl::activate() {
  for (auto& pipeline : pipelines_)
    pipeline->activate(loads_.at(pipeline->device())->loadId(),
                       reservation_ ? reservation_->groupOn(pipeline->device()) : 0);
}

void InferenceSetImpl::deactivate() {
  for (auto& pipeline : pipelines_) pipeline->deactivate();
}

InferenceHandleImpl& InferenceSetImpl::own(const shInferenceHandle& handle, const char* operation) const {
  return ownHandle(handle, this, name_, operation);
}

Pipeline& InferenceSetImpl::pipelineOf(const InferenceHandleImpl& handle) const {
  return *pipelines_[handle.activation()];
}

template <typename Predicate>
bool InferenceSetImpl::waitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs,
                               Predicate done) {
  if (timeoutUs == 0) {
    cv.wait(lock, [&] { return done() || shuttingDown_; });
    return done();
  }
  return cv.wait_for(lock, std::chrono::microseconds(timeoutUs), done);
}

template <typename Predicate>
bool InferenceSetImpl::waitForHandle(InferenceHandleImpl& handle, std::unique_lock<std::mutex>& lock,
                                     uint64_t timeoutUs, Predicate done) {
  if (done()) return true;
  const auto start = Clock::now();
  RequestRing& ring = pipelineOf(handle).ring();
  InterruptLeader& leader = ring.interruptLeader();
  lock.unlock();  // the ring's lock is never taken under the set's
  const auto deadline = timeoutUs == 0 ? Clock::time_point::max() : start + std::chrono::microseconds(timeoutUs);
  std::shared_ptr<driver::DbcWindow> window = ring.leadableWindow();
  if (window && window->devicePolls()) {
    spinForHandle(handle, ring, *window, deadline);
    lock.lock();
    if (done()) return true;
    lock.unlock();
  }
  const bool leading = leader.tryLead(std::move(window));
  lock.lock();
  if (!leading) return waitFor(handle.completed, lock, timeoutUs, done);
  bool ok = false;
  for (;;) {
    if ((ok = done()) || shuttingDown_ || Clock::now() >= deadline) break;
    // Read under the lock, after the check: a completion on another thread changes the handle
    // under this lock and only then wakes the leader, so the wake-up finds a newer word.
    const uint32_t ticket = leader.ticket();
    lock.unlock();
    leader.await(ticket, deadline, RequestRing::kPresenceCheckPeriod);  // the drain checks the device
    ring.drain();
    lock.lock();
  }
  leader.stopLeading();
  return ok;
}

void InferenceSetImpl::spinForHandle(InferenceHandleImpl& handle, RequestRing& ring, driver::DbcWindow& window,
                                     Clock::time_point deadline) {
  driver::AdaptiveSpin& spin = ring.interruptLeader().waiterSpin();
  const auto spinFor = spin.spinFor(kHostSpin);
  if (spinFor <= std::chrono::nanoseconds::zero()) return;
  const auto until = std::min(deadline, Clock::now() + spinFor);
  InterruptLeader::Spinning spinning(ring.interruptLeader());
  bool found = false;
  for (unsigned turn = 0;; ++turn) {
    if ((found = handle.concluded.load(std::memory_order_acquire))) break;
    if (window.responsesPending() && ring.tryDrain()) continue;
    if (driver::spinExpired(turn, until) || shuttingDown()) break;
    driver::spinTurn(turn);
  }
  spin.result(found);
}

QStatus InferenceSetImpl::getAvailable(shInferenceHandle& handle, uint64_t timeoutUs) {
  return acquireAvailable(handle, timeoutUs, std::nullopt);
}

QStatus InferenceSetImpl::getAvailableOnActivation(uint32_t activation, shInferenceHandle& handle, uint64_t timeoutUs) {
  checkActivation("getAvailableOnActivation", activation);
  return acquireAvailable(handle, timeoutUs, activation);
}

QStatus InferenceSetImpl::acquireAvailable(shInferenceHandle& handle, uint64_t timeoutUs,
                                           std::optional<uint32_t> activation) {
  std::unique_lock lock(mutex_);
  handle.reset();
  if (!waitFor(availableChanged_, lock, timeoutUs, [&] { return handles_.hasFree(activation); }))
    return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  handle = handles_.take(activation);
  return QS_SUCCESS;
}

void InferenceSetImpl::checkActivation(const char* call, uint32_t activation) const {
  checkActivationIndex(call, name_, activation, numActivations_);
}

void InferenceSetImpl::resetRetainedState(uint32_t activation) {
  checkActivation("resetRetainedState", activation);
  std::lock_guard lock(mutex_);
  resetPending_[activation] = true;
}

void InferenceSetImpl::submit(const shInferenceHandle& handle, uint64_t requestId) {
  submitHandle(handle, requestId, nullptr, nullptr, false);
}

void InferenceSetImpl::submit(const shInferenceHandle& handle, NotifyFn notifyFn, void* userData) {
  submitHandle(handle, 0, std::move(notifyFn), userData, true);
}

void InferenceSetImpl::submitHandle(const shInferenceHandle& handle, uint64_t requestId, NotifyFn notifyFn,
                                    void* userData, bool viaNotify) {
  InferenceHandleImpl& h = own(handle, "submit");
  if (viaNotify && !notifyFn) throw Error(QS_INVAL, "submit: null notify function");
  {
    std::lock_guard lock(mutex_);
    if (shuttingDown_) throw Error(QS_CANCELED, "submit: InferenceSet '" + name_ + "' is shutting down");
    std::lock_guard handleLock(h.mutex);
    h.state.requireAcquired("submit");
    std::vector<IoSetEntry> entries(layout_.buffers.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const QBuffer& b = h.buffers[i];
      entries[i].present = !h.skipped[i];
      entries[i].dims = h.dims[i];
      entries[i].bytes = b.size;
      if (!entries[i].present) continue;
      const std::string& bufferName = layout_.buffers[i].name;
      if (b.type == QBUFFER_TYPE_DMABUF) {
        // A buffer of this context, or any dma-buf descriptor: the activation imports it.
        if (!context_->findDmaBuffer(b.handle) && ::fcntl(b.handle, F_GETFD) < 0)
          throw Error(QS_INVAL, "submit: buffer '" + bufferName + "': DMA handle " + std::to_string(b.handle) +
                                    " is neither a live DMA buffer of this context nor an open descriptor");
      } else if (b.type != QBUFFER_TYPE_HEAP) {
        throw Error(QS_INVAL, "submit: buffer '" + bufferName + "': unknown QBuffer type " +
                                  std::to_string(static_cast<uint32_t>(b.type)));
      } else if (b.buf == nullptr && b.size != 0) {
        throw Error(QS_INVAL, "submit: buffer '" + bufferName + "' was not set (null pointer)");
      }
    }
    const IoSetShape shape = validateIoSet(layout_.rules, entries);
    h.present.assign(entries.size(), false);
    for (std::size_t i = 0; i < entries.size(); ++i) h.present[i] = entries[i].present;
    h.submittedDims = shape.dims;
    // Taken in submission order, under the set's lock: exactly the first submission after
    // resetRetainedState carries the reset to the device.
    h.resetState = resetPending_[h.activation()];
    resetPending_[h.activation()] = false;
    h.requestId = requestId;
    h.viaNotify = viaNotify;
    h.notifyFn = std::move(notifyFn);
    h.notifyUserData = userData;
    h.retrieved = false;
    h.waitedFor = false;
    h.work = {};
    h.submittedAt = Clock::now();
    h.concluded.store(false, std::memory_order_relaxed);
    h.state.submit();
    ++inFlight_;
  }
  pipelineOf(h).submit(h);
}

void InferenceSetImpl::finished(InferenceHandleImpl& h, QStatus status, const std::string& message) {
  // Profilers, the error handler and notify callbacks are user code that may block: on a
  // thread of the context's pool, the pool may start another meanwhile (from the first of them
  // this completion runs).
  std::optional<WorkerPool::BlockingScope> userCode;
  // Reported before the handle turns Completed, so whoever waits for it sees the report done.
  // h.work and h.requestId are the pipeline's until then; the label's fields are set at submit.
  const uint64_t requestId = h.requestId;
  std::vector<std::pair<std::shared_ptr<ProfilingHandleImpl::State>, ProfilingReport>> reports;
  {
    std::lock_guard lock(profilerMutex_);
    if (!profilers_.empty()) {
      const auto counters = performanceCounts(h.work.stages);
      for (auto& weak : profilers_)
        if (auto profiler = weak.lock())
          if (auto report = profiler->record(requestId, status, counters))
            reports.emplace_back(std::move(profiler), std::move(*report));
    }
  }
  // A full report goes to its callback without the profiler lock (the callback may destroy its
  // ProfilingHandle), before the handle completes.
  if (!reports.empty()) userCode.emplace();
  for (const auto& [profiler, report] : reports) {
    try {
      profiler->deliver(report);
    } catch (const std::exception& e) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': profiling callback threw: " + e.what());
    } catch (...) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': profiling callback threw");
    }
  }
  if (status != QS_SUCCESS) {
    if (!userCode) userCode.emplace();
    context_->reportError(status, "InferenceSet '" + name_ + "' " + h.requestLabel() + ": " + message);
  }
  NotifyFn notify;
  void* userData = nullptr;
  const shInferenceHandle shared = handles_.at(h.index());
  {
    std::lock_guard lock(mutex_);
    std::lock_guard handleLock(h.mutex);
    if (h.state.state() != HandleState::Submitted) return;  // already concluded
    h.status = status;
    h.errorMessage = message;
    h.stages = h.work.stages;
    h.outputDims = h.work.outputDims;
    h.transfers.hostCopiedBytes = h.work.hostCopiedBytes;
    h.transfers.inPlaceBytes = 0;
    for (uint64_t bytes : h.work.directBytes) h.transfers.inPlaceBytes += bytes;
    h.state.complete();
    h.concluded.store(true, std::memory_order_release);
    --inFlight_;
    if (h.viaNotify) {
      notify = h.notifyFn;
      userData = h.notifyUserData;
    }
    // changed_ is notified under the lock: a waiter woken by the drain may destroy the set at
    // once. The handle's own condition is notified after it, so the woken thread does not block
    // on the mutex this thread still holds; `shared` keeps the handle alive until then.
    if (inFlight_ == 0 || anyWaiters_ > 0) changed_.notify_all();
  }
  h.completed.notify_all();
  pipelineOf(h).ring().interruptLeader().wake();
  if (notify) {
    if (!userCode) userCode.emplace();
    try {
      notify(shared, userData);
    } catch (const std::exception& e) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': notify callback threw: " + e.what());
    } catch (...) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': notify callback threw");
    }
  }
}

QStatus InferenceSetImpl::getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs) {
  std::unique_lock lock(mutex_);
  handle.reset();
  if (handles_.findByRequestId(requestId, false) == nullptr)
    throw Error(QS_INVAL, "getCompletedId: no inference with requestId " + std::to_string(requestId) +
                              " was submitted to '" + name_ + "' (or it was already retrieved)");
  InferenceHandleImpl* found = nullptr;
  InferenceHandleImpl* sole = handles_.soleWithRequestId(requestId);
  if (sole == nullptr) ++anyWaiters_;
  auto completed = [&] { return (found = handles_.findByRequestId(requestId, true)) != nullptr; };
  const bool ok = sole ? waitForHandle(*sole, lock, timeoutUs, completed)
                       : waitFor(changed_, lock, timeoutUs, completed);
  if (sole == nullptr) --anyWaiters_;
  if (!ok) return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  std::lock_guard handleLock(found->mutex);
  found->retrieved = true;
  handle = handles_.at(found->index());
  return found->status;
}

void InferenceSetImpl::putCompleted(const shInferenceHandle& handle) {
  InferenceHandleImpl& h = own(handle, "putCompleted");
  {
    std::lock_guard lock(mutex_);
    handles_.putBack(h);
  }
  availableChanged_.notify_all();  // a waiter may want only this activation's handles
}

QStatus InferenceSetImpl::waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs) {
  InferenceHandleImpl& h = own(handle, "waitForCompletion");
  std::unique_lock lock(mutex_);
  auto state = [&] {
    std::lock_guard handleLock(h.mutex);
    return h.state.state();
  };
  const HandleState now = state();
  if (now != HandleState::Submitted && now != HandleState::Completed)
    throw Error(QS_WRONG_STATE, std::string("waitForCompletion: the inference handle is ") + handleStateName(now));
  if (!waitForHandle(h, lock, timeoutUs, [&] { return state() == HandleState::Completed; }))
    return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  std::lock_guard handleLock(h.mutex);
  h.waitedFor = true;  // the application consumes it: the set-wide wait no longer discards it
  return h.status;
}

QStatus InferenceSetImpl::waitForCompletion(uint64_t timeoutUs) {
  std::size_t discarded = 0;
  {
    std::unique_lock lock(mutex_);
    const auto drained = [&] { return inFlight_ == 0; };
    if (timeoutUs == 0)
      changed_.wait(lock, drained);
    else if (!changed_.wait_for(lock, std::chrono::microseconds(timeoutUs), drained))
      return QS_TIMEDOUT;
    discarded = handles_.putBackUnclaimed();
  }
  if (discarded > 0) availableChanged_.notify_all();
  return QS_SUCCESS;
}

std::shared_ptr<DmaBuffer> InferenceSetImpl::allocateDmaBuffer(std::size_t size) {
  // The set's Context is the owner of DMA buffers; the set only picks its device.
  return context_->allocateDmaBuffer(device_, size);
}

bool InferenceSetImpl::admit(AdmitTicket& ticket) { return !group_ || group_->tryAdmit(*this, ticket); }

void InferenceSetImpl::forget(AdmitTicket& ticket) {
  if (group_) group_->forget(*this, ticket);
}

void InferenceSetImpl::release() {
  if (group_) group_->requestEnded(*this);
}

void InferenceSetImpl::wakeParked() {
  for (auto& pipeline : pipelines_) pipeline->wakeParked();
}

void InferenceSetImpl::addProfiler(const std::shared_ptr<ProfilingHandleImpl::State>& profiler) {
  std::lock_guard lock(profilerMutex_);
  profilers_.push_back(profiler);
}

void InferenceSetImpl::removeProfiler(const ProfilingHandleImpl::State* profiler) {
  std::lock_guard lock(profilerMutex_);
  std::erase_if(profilers_, [&](const std::weak_ptr<ProfilingHandleImpl::State>& weak) {
    auto locked = weak.lock();
    return !locked || locked.get() == profiler;
  });
}

}  // namespace qaic::rt
