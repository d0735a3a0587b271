// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/MultiDeviceSetImpl.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include "runtime/loading/PartPlacement.hpp"
#include "runtime/loading/QAicQpcObj.hpp"

namespace qaic::rt {
namespace {

// Peer-group tokens: unique in this process (the counter) and, with the random base, against
// other processes sharing the emulator's registry.
uint64_t nextPeerToken() {
  static const uint64_t base = [] {
    std::random_device random;
    return (uint64_t{random()} << 32) ^ random();
  }();
  static std::atomic<uint64_t> counter{0};
  const uint64_t token = base + (counter.fetch_add(1) << 8);
  return token == 0 ? 1 : token;
}

// The part whose failure names the cause: a card gone or reset before one whose program failed
// because a peer broke the group (QS_DEVICE_ERROR), else the first that failed.
std::size_t causeOf(const std::vector<QStatus>& status) {
  auto rank = [](QStatus s) { return s == QS_DEV_REMOVED ? 0 : s == QS_DEV_RESET ? 1 : s == QS_DEVICE_ERROR ? 3 : 2; };
  std::size_t cause = status.size();
  for (std::size_t p = 0; p < status.size(); ++p) {
    if (status[p] == QS_SUCCESS) continue;
    if (cause == status.size() || rank(status[p]) < rank(status[cause])) cause = p;
  }
  return cause;
}

// How long a submission waits for a part's handle: one is free at once unless a callback of
// an earlier inference of the activation is still putting its own back.
constexpr uint64_t kPartHandleWaitUs = 10'000'000;

}  // namespace

MultiDeviceSetImpl::MultiDeviceSetImpl(std::shared_ptr<ContextImpl> context, std::shared_ptr<Qpc> qpc, uint32_t setSize,
                                       uint32_t numActivations, const InferenceSetProperties& properties)
    : context_(std::move(context)),
      qpc_(std::move(qpc)),
      setSize_(setSize),
      numActivations_(numActivations),
      properties_(properties),
      name_(properties.name.empty() ? "InferenceSet" : properties.name),
      id_(properties.id) {
  const std::string what = "InferenceSet '" + name_ + "'";
  if (setSize == 0) throw Error(QS_INVAL, what + ": setSize must be at least 1");
  if (numActivations == 0) throw Error(QS_INVAL, what + ": numActivations must be at least 1");
  if (properties.inferenceSetGroup)
    throw Error(QS_INVAL, what + ": a multi-device program cannot be a member of an InferenceSetGroup");
  if (uint64_t{setSize} * numActivations > InferenceSetImpl::kMaxHandles)
    throw Error(QS_INVAL, what + ": setSize " + std::to_string(setSize) + " x numActivations " +
                              std::to_string(numActivations) + " handles exceed " +
                              std::to_string(InferenceSetImpl::kMaxHandles));
  const container::QpcImage& image = *qpc_->get()->image;
  devices_ = choosePartDevices(*context_, image, numActivations, properties.programProperties, what);
  buildParts(devices_, partPrograms(image));

  const ProgramLayout& layout = parts_.front().layout;
  flights_.resize(std::size_t{setSize} * numActivations);
  for (uint32_t i = 0; i < setSize * numActivations; ++i) {
    handles_.add(std::make_shared<InferenceHandleImpl>(this, layout, i, i / setSize));
    Flight& flight = flights_[i];
    flight.status.assign(parts_.size(), QS_SUCCESS);
    flight.message.assign(parts_.size(), "");
    flight.scratch.resize(parts_.size());
  }
  resetPending_.assign(numActivations, false);
  context_->log(QL_INFO, what + ": " + std::to_string(parts_.size()) + " parts on devices " + deviceListText(devices_) +
                             ", " + std::to_string(numActivations) + " activation(s) x " + std::to_string(setSize) +
                             " handle(s)");
}

void MultiDeviceSetImpl::buildParts(const std::vector<QID>& devices, std::vector<std::shared_ptr<Qpc>> qpcs) {
  const uint32_t count = static_cast<uint32_t>(devices.size());
  PeerPartPlacement placement;
  placement.parts = count;
  for (uint32_t a = 0; a < numActivations_; ++a) placement.tokens.push_back(nextPeerToken());

  // The layouts and the name matching first: a program whose parts do not fit together is
  // refused before any card is touched.
  for (uint32_t p = 0; p < count; ++p) {
    Part part;
    part.device = devices[p];
    part.qpc = std::move(qpcs[p]);
    part.layout = makeProgramLayout(*part.qpc->get()->image, 0, shapeRules(part.qpc->getBufferMappingsV2()));
    part.sentBytes = qpc_->get()->image->deviceParts()[p].sentBytes;
    for (const StagedBuffer& b : part.layout.buffers) {
      int index = -1;
      if (p == 0) {
        index = static_cast<int>(b.mappingIndex);
      } else {
        const auto& own = parts_.front().layout.buffers;
        auto it = std::find_if(own.begin(), own.end(), [&](const StagedBuffer& o) { return o.name == b.name; });
        if (it != own.end() && it->isInput == b.isInput) index = static_cast<int>(it - own.begin());
        if (index < 0 && b.isInput)
          throw Error(QS_INCOMPATIBLE, "InferenceSet '" + name_ + "': part " + std::to_string(p) + " of " +
                                           qpc_->get()->image->sourceName() + " reads input '" + b.name +
                                           "', which part 0 does not declare");
      }
      part.setIndex.push_back(index);
      std::size_t bytes = 0;
      for (const BufferMapping& m : part.qpc->getBufferMappings())
        if (m.index == b.mappingIndex) bytes = m.size;
      part.fullBytes.push_back(bytes);
    }
    parts_.push_back(std::move(part));
  }

  // Then part after part; a failure unwinds through the destructor of what was built, which
  // deactivates the parts already up and releases their reservations.
  InferenceSetProperties partProperties = properties_;
  partProperties.programProperties.devMapping.clear();
  try {
    for (uint32_t p = 0; p < count; ++p) {
      partProperties.name = name_ + " part " + std::to_string(p);
      placement.part = p;
      parts_[p].set = std::make_unique<InferenceSetImpl>(context_, parts_[p].qpc, parts_[p].device, setSize_,
                                                         numActivations_, partProperties, placement);
    }
  } catch (const Error& e) {
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) it->set.reset();
    throw Error(e.status(), "InferenceSet '" + name_ + "': " + std::to_string(count) + "-part program on devices " +
                                deviceListText(devices) + ": " + e.what());
  }
}

MultiDeviceSetImpl::~MultiDeviceSetImpl() { shutdown(); }

void MultiDeviceSetImpl::shutdown() {
  {
    std::unique_lock lock(mutex_);
    shuttingDown_ = true;
    changed_.notify_all();
    for (const auto& handle : handles_.all()) handle->completed.notify_all();
  }
  // Each part's set gives its inferences in flight their chance to end and cancels the rest; the
  // callbacks of those still reach partEnded, whose state lives until the end of this body.
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) it->set.reset();
}

InferenceHandleImpl& MultiDeviceSetImpl::own(const shInferenceHandle& handle, const char* operation) const {
  return ownHandle(handle, this, name_, operation);
}

void MultiDeviceSetImpl::checkActivation(const char* call, uint32_t activation) const {
  checkActivationIndex(call, name_, activation, numActivations_);
}

template <typename Predicate>
bool MultiDeviceSetImpl::waitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, uint64_t timeoutUs,
                                 Predicate done) {
  if (timeoutUs == 0) {
    cv.wait(lock, [&] { return done() || shuttingDown_; });
    return done();
  }
  return cv.wait_for(lock, std::chrono::microseconds(timeoutUs), [&] { return done() || shuttingDown_; }) && done();
}

QStatus MultiDeviceSetImpl::getAvailable(shInferenceHandle& handle, uint64_t timeoutUs) {
  return acquire(handle, timeoutUs, std::nullopt);
}

QStatus MultiDeviceSetImpl::getAvailableOnActivation(uint32_t activation, shInferenceHandle& handle,
                                                     uint64_t timeoutUs) {
  checkActivation("getAvailableOnActivation", activation);
  return acquire(handle, timeoutUs, activation);
}

QStatus MultiDeviceSetImpl::acquire(shInferenceHandle& handle, uint64_t timeoutUs, std::optional<uint32_t> activation) {
  std::unique_lock lock(mutex_);
  handle.reset();
  if (!waitFor(changed_, lock, timeoutUs, [&] { return handles_.hasFree(activation); }))
    return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  handle = handles_.take(activation);
  return QS_SUCCESS;
}

void MultiDeviceSetImpl::resetRetainedState(uint32_t activation) {
  checkActivation("resetRetainedState", activation);
  std::lock_guard lock(mutex_);
  resetPending_[activation] = true;
}

void MultiDeviceSetImpl::submit(const shInferenceHandle& handle, uint64_t requestId) {
  submitHandle(handle, requestId, nullptr, nullptr, false);
}

void MultiDeviceSetImpl::submit(const shInferenceHandle& handle, NotifyFn notifyFn, void* userData) {
  submitHandle(handle, 0, std::move(notifyFn), userData, true);
}

void MultiDeviceSetImpl::submitHandle(const shInferenceHandle& handle, uint64_t requestId, NotifyFn notifyFn,
                                      void* userData, bool viaNotify) {
  InferenceHandleImpl& h = own(handle, "submit");
  if (viaNotify && !notifyFn) throw Error(QS_INVAL, "submit: null notify function");
  bool resetState = false;
  {
    std::lock_guard lock(mutex_);
    if (shuttingDown_) throw Error(QS_CANCELED, "submit: InferenceSet '" + name_ + "' is shutting down");
    std::lock_guard handleLock(h.mutex);
    h.state.requireAcquired("submit");
    Flight& flight = flights_[h.index()];
    flight.remaining = static_cast<uint32_t>(parts_.size());
    flight.transfers = {};
    flight.status.assign(parts_.size(), QS_SUCCESS);
    flight.message.assign(parts_.size(), "");
    resetState = resetPending_[h.activation()];
    resetPending_[h.activation()] = false;
    h.requestId = requestId;
    h.viaNotify = viaNotify;
    h.notifyFn = std::move(notifyFn);
    h.notifyUserData = userData;
    h.retrieved = false;
    h.waitedFor = false;
    h.submittedAt = Clock::now();
    h.concluded.store(false, std::memory_order_relaxed);
    h.state.submit();
    ++inFlight_;
  }
  // Part 0 first: its submit checks the IO set against the program's (the parts' IO is part
  // 0's or follows from it), so a bad IO set is refused before any card has work.
  try {
    submitPart(h, 0, resetState);
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      std::lock_guard handleLock(h.mutex);
      h.state.unsubmit();
      --inFlight_;
      if (resetState) resetPending_[h.activation()] = true;
    }
    changed_.notify_all();
    throw;
  }
  for (std::size_t p = 1; p < parts_.size(); ++p) {
    try {
      submitPart(h, p, resetState);
    } catch (const Error& e) {
      // Part 0 runs already: it fails when its collective gives up on this part.
      partEnded(h, p, PartOutcome{e.status(), e.what(), {}, {}, {}});
    }
  }
}

void MultiDeviceSetImpl::submitPart(InferenceHandleImpl& h, std::size_t p, bool resetState) {
  Part& part = parts_[p];
  InferenceSetImpl& set = *part.set;
  shInferenceHandle partHandle;
  const QStatus got = set.getAvailableOnActivation(h.activation(), partHandle, kPartHandleWaitUs);
  if (got != QS_SUCCESS)
    throw Error(got, "submit: InferenceSet '" + name_ + "': no handle of part " + std::to_string(p) + " on device " +
                         std::to_string(part.device) + " came free");
  try {
    std::vector<QBuffer> buffers(part.layout.buffers.size());
    std::vector<std::optional<IoDims>> dims(buffers.size());
    std::vector<bool> skipped(buffers.size(), false);
    {
      std::lock_guard handleLock(h.mutex);
      auto& scratch = flights_[h.index()].scratch[p];
      scratch.resize(buffers.size());
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        const int index = part.setIndex[i];
        const bool own = p == 0 || part.layout.buffers[i].isInput;
        if (index >= 0) {
          dims[i] = h.dims[index];
          skipped[i] = h.skipped[index];
        }
        if (index >= 0 && own) {
          buffers[i] = h.buffers[index];
          continue;
        }
        // Another part's output: the same bytes as the user's buffer of that name, or the
        // whole buffer where part 0 has none; nothing reads it.
        const std::size_t bytes = index >= 0 ? h.buffers[index].size : part.fullBytes[i];
        if (scratch[i].size() < bytes) scratch[i].resize(bytes);
        buffers[i].size = bytes;
        buffers[i].buf = reinterpret_cast<uint8_t*>(scratch[i].data());
      }
    }
    partHandle->setBuffers(buffers);
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (dims[i]) partHandle->setBufferDims(static_cast<uint32_t>(i), *dims[i]);
      if (skipped[i]) partHandle->setBufferSkipped(static_cast<uint32_t>(i), true);
    }
    if (resetState) set.resetRetainedState(h.activation());
    set.submit(
        partHandle,
        [this, &h, &set, p](const shInferenceHandle& ended, void*) {
          PartOutcome outcome;
          {
            const auto& impl = static_cast<const InferenceHandleImpl&>(*ended);
            std::lock_guard partLock(impl.mutex);
            outcome = {impl.status, impl.errorMessage, impl.stages, impl.outputDims, impl.transfers};
          }
          // Back first: once the last part reports, the application may destroy this set.
          set.putCompleted(ended);
          partEnded(h, p, outcome);
        },
        nullptr);
  } catch (...) {
    set.putCompleted(partHandle);
    throw;
  }
}

void MultiDeviceSetImpl::partEnded(InferenceHandleImpl& h, std::size_t p, const PartOutcome& outcomeOfPart) {
  NotifyFn notify;
  void* userData = nullptr;
  std::string failure;
  QStatus outcome = QS_SUCCESS;
  const shInferenceHandle shared = handles_.at(h.index());
  {
    std::lock_guard lock(mutex_);
    std::lock_guard handleLock(h.mutex);
    Flight& flight = flights_[h.index()];
    flight.status[p] = outcomeOfPart.status;
    flight.message[p] = outcomeOfPart.message;
    if (p == 0) {
      h.stages = outcomeOfPart.stages;
      h.outputDims = outcomeOfPart.outputDims;
    }
    // Every card's host transfers count; the bytes between cards never pass the host.
    flight.transfers.hostCopiedBytes += outcomeOfPart.transfers.hostCopiedBytes;
    flight.transfers.inPlaceBytes += outcomeOfPart.transfers.inPlaceBytes;
    if (--flight.remaining > 0) return;
    h.transfers = flight.transfers;

    const std::size_t cause = causeOf(flight.status);
    if (cause < parts_.size()) {
      outcome = flight.status[cause];
      failure = "device " + std::to_string(parts_[cause].device) + " (part " + std::to_string(cause) + " of " +
                std::to_string(parts_.size()) + "): " + flight.message[cause];
      for (std::size_t q = 0; q < parts_.size(); ++q)
        if (q != cause && flight.status[q] != QS_SUCCESS)
          failure += "; device " + std::to_string(parts_[q].device) + " (part " + std::to_string(q) +
                     "): " + flight.message[q];
    }
    // What the collectives and the pipeline links move per inference is fixed by the program.
    h.betweenCardsBytes = 0;
    if (outcome == QS_SUCCESS)
      for (const Part& part : parts_) h.betweenCardsBytes += part.sentBytes;
    h.status = outcome;
    h.errorMessage = failure;
    h.state.complete();
    h.concluded.store(true, std::memory_order_release);
    --inFlight_;
    if (h.viaNotify) {
      notify = h.notifyFn;
      userData = h.notifyUserData;
    }
    changed_.notify_all();
  }
  h.completed.notify_all();
  if (outcome != QS_SUCCESS)
    context_->log(QL_ERROR, "InferenceSet '" + name_ + "' " + h.requestLabel() + ": " + failure);
  if (notify) {
    try {
      notify(shared, userData);
    } catch (const std::exception& e) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': notify callback threw: " + e.what());
    } catch (...) {
      context_->log(QL_ERROR, "InferenceSet '" + name_ + "': notify callback threw");
    }
  }
}

QStatus MultiDeviceSetImpl::getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs) {
  std::unique_lock lock(mutex_);
  handle.reset();
  if (handles_.findByRequestId(requestId, false) == nullptr)
    throw Error(QS_INVAL, "getCompletedId: no inference with requestId " + std::to_string(requestId) +
                              " was submitted to '" + name_ + "' (or it was already retrieved)");
  InferenceHandleImpl* found = nullptr;
  if (!waitFor(changed_, lock, timeoutUs,
               [&] { return (found = handles_.findByRequestId(requestId, true)) != nullptr; }))
    return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  std::lock_guard handleLock(found->mutex);
  found->retrieved = true;
  handle = handles_.at(found->index());
  return found->status;
}

void MultiDeviceSetImpl::putCompleted(const shInferenceHandle& handle) {
  InferenceHandleImpl& h = own(handle, "putCompleted");
  {
    std::lock_guard lock(mutex_);
    handles_.putBack(h);
  }
  changed_.notify_all();
}

QStatus MultiDeviceSetImpl::waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs) {
  InferenceHandleImpl& h = own(handle, "waitForCompletion");
  std::unique_lock lock(mutex_);
  auto state = [&] {
    std::lock_guard handleLock(h.mutex);
    return h.state.state();
  };
  const HandleState now = state();
  if (now != HandleState::Submitted && now != HandleState::Completed)
    throw Error(QS_WRONG_STATE, std::string("waitForCompletion: the inference handle is ") + handleStateName(now));
  if (!waitFor(changed_, lock, timeoutUs, [&] { return state() == HandleState::Completed; }))
    return shuttingDown_ ? QS_CANCELED : QS_TIMEDOUT;
  std::lock_guard handleLock(h.mutex);
  h.waitedFor = true;
  return h.status;
}

QStatus MultiDeviceSetImpl::waitForCompletion(uint64_t timeoutUs) {
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
  if (discarded > 0) changed_.notify_all();
  return QS_SUCCESS;
}

std::shared_ptr<DmaBuffer> MultiDeviceSetImpl::allocateDmaBuffer(std::size_t size) {
  return context_->allocateDmaBuffer(devices_.front(), size);
}

}  // namespace qaic::rt
