#include "ActivationQueue.hpp"

#include <pthread.h>


#include "ContextImpl.hpp"
#include "DmaBufferImpl.hpp"
#include "SetImpl.hpp"
#include "driver/ManageMessage.hpp"
#include "kernels/DeviceFormat.hpp"

namespace qaic::rt::engine {
namespace {

ir::Dims toIrDims(const IoDims& dims) { return ir::Dims(dims.begin(), dims.end()); }

QStatus statusForErrno(int error) {
  switch (error) {
    case ENOSPC: return QS_NO_RESOURCES;
    case ENODEV:
    case ENXIO: return QS_DEV_REMOVED;
    case EINVAL:
    case EBADMSG:
    case ENOEXEC: return QS_INCOMPATIBLE;
    default: return QS_ERROR;
  }
}

QStatus statusForCompletion(uint16_t code) {
  switch (code) {
    case driver::DBC_COMPLETION_SUCCESS: return QS_SUCCESS;
    case driver::DBC_COMPLETION_DEVICE_RESET: return QS_DEV_RESET;
    case driver::DBC_COMPLETION_ABORTED: return QS_DEV_REMOVED;
    case driver::DBC_COMPLETION_SEMAPHORE_TIMEOUT:
    case driver::DBC_COMPLETION_NSP_HANG: return QS_TIMEDOUT;
    default: return QS_DEVICE_ERROR;
  }
}

}  // namespace

ActivationQueue::ActivationQueue(SetImpl& set, uint32_t index, QID device,
                                 std::shared_ptr<const driver::DeviceNode> node,
                                 const ProgramLayout& layout, QueueConfig config)
    : set_(set), context_(set.context()), index_(index), device_(device), node_(std::move(node)),
      layout_(layout), config_(config) {
  auto event = driver::CompletionEvent::create();
  if (!event) throw Error(QS_ERROR, "queue " + std::to_string(index) + ": " + event.message());
  event_.emplace(std::move(event.value()));
  engine_ = std::make_unique<CompletionEngine>(
      event_->fd(), [this] { onWake(); }, [this] { return nextDeadline(); });
  const uint32_t threads = std::max<uint32_t>(1, config_.threads);
  for (uint32_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "qaic-pipeline");
      worker();
    });
  }
}

ActivationQueue::~ActivationQueue() {
  shutdown();
  deactivate();
}

void ActivationQueue::shutdown() {
  {
    std::lock_guard lock(taskMutex_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  taskReady_.notify_all();
  for (auto& thread : workers_) thread.join();
  workers_.clear();
  {
    // A submission running on its caller's thread reaches the ring (or fails) before the
    // in-flight requests are failed below; it is bounded by the data-path timeout.
    std::unique_lock lock(taskMutex_);
    inlineDone_.wait(lock, [&] { return inlineSubmissions_ == 0; });
  }
  if (engine_) engine_->stop();
  // Anything still queued or in flight now fails; nothing will complete it otherwise.
  std::vector<Task> failed;
  {
    std::lock_guard lock(ringMutex_);
    failAllLocked(QS_CANCELED, "the inference set is shutting down", failed);
  }
  std::deque<Task> pending;
  {
    std::lock_guard lock(taskMutex_);
    pending.swap(tasks_);
    for (Task& task : parked_) pending.push_back(std::move(task));
    parked_.clear();
  }
  for (Task& task : pending) {
    task.status = QS_CANCELED;
    task.message = "the inference set is shutting down";
    failed.push_back(std::move(task));
  }
  for (Task& task : failed) conclude(task);
}

void ActivationQueue::addHandle(HandleImpl& handle) {
  auto in = driver::BufferObject::create(*node_, layout_.inputStagingBytes);
  if (!in) throw Error(statusForErrno(in.error()) == QS_INCOMPATIBLE ? QS_ERROR : QS_NO_RESOURCES,
                       "staging buffer for handle " + std::to_string(handle.index()) + ": " + in.message());
  auto out = driver::BufferObject::create(*node_, layout_.outputStagingBytes);
  if (!out) throw Error(QS_NO_RESOURCES, "staging buffer for handle " + std::to_string(handle.index()) +
                                             ": " + out.message());
  handle.inputBo.emplace(std::move(in.value()));
  handle.outputBo.emplace(std::move(out.value()));
  handles_.push_back(&handle);
}

void ActivationQueue::attachStaging(HandleImpl& handle, uint32_t dbcId) {
  auto attach = [&](const driver::BufferObject& bo, uint32_t dir,
                    std::vector<qaic_attach_slice_entry> slices) {
    (void)node_->detachSlice(bo.handle());  // a BO is sliced to one DBC; a new activation re-slices
    uint64_t total = 0;
    for (const auto& s : slices) total += s.size;
    qaic_attach_slice_hdr hdr{};
    hdr.dbc_id = dbcId;
    hdr.handle = bo.handle();
    hdr.dir = dir;
    hdr.size = total;
    auto rc = node_->attachSlices(hdr, slices);
    if (!rc)
      throw Error(QS_ERROR, "attaching the staging of handle " + std::to_string(handle.index()) +
                                " to DBC " + std::to_string(dbcId) + ": " + rc.message());
  };
  auto slice = [](uint64_t offset, uint64_t size, uint64_t devAddr) {
    qaic_attach_slice_entry e{};
    e.offset = offset;
    e.size = size;
    e.dev_addr = devAddr;
    return e;
  };
  std::vector<qaic_attach_slice_entry> in{slice(layout_.requestDescriptorStaging, driver::kDescriptorBytes,
                                                layout_.requestDescriptorOffset)};
  std::vector<qaic_attach_slice_entry> out;
  for (const StagedBuffer& b : layout_.buffers) {
    if (b.deviceSize == 0) continue;
    (b.isInput ? in : out).push_back(slice(b.stagingOffset, b.deviceSize, b.deviceOffset));
  }
  out.push_back(slice(layout_.responseDescriptorStaging, driver::kDescriptorBytes,
                      layout_.responseDescriptorOffset));
  attach(*handle.inputBo, QAIC_DIR_TO_DEVICE, std::move(in));
  attach(*handle.outputBo, QAIC_DIR_FROM_DEVICE, std::move(out));
}

void ActivationQueue::activate(uint32_t loadId) {
  std::lock_guard lock(ringMutex_);
  if (active_) return;
  driver::ManageBuffer message;
  try {
    message = driver::ManageMessageBuilder()
                  .activate(config_.queueSize, static_cast<uint32_t>(event_->fd()),
                            driver::makeActivateOptions(loadId, layout_.programIndex))
                  .take();
  } catch (const driver::ManageMessageError& e) {
    throw Error(QS_ERROR, std::string("activate: ") + e.what());
  }
  auto rc = node_->manage(message);
  if (!rc) {
    std::string detail = rc.message();
    if (rc.error() == ENOSPC) {
      auto freeNsps = node_->sysfs().readU64("nsp_free");
      detail += "; the program needs " + std::to_string(layout_.numCores) + " NSP(s) per activation" +
                (freeNsps ? ", the device has " + std::to_string(*freeNsps) + " free" : std::string());
    }
    throw Error(statusForErrno(rc.error()),
                "activation " + std::to_string(index_) + " of '" + set_.name() + "' on device " +
                    std::to_string(device_) + ": " + detail);
  }
  std::vector<driver::ManageReply> replies;
  try {
    replies = driver::parseManageReply(message);
  } catch (const driver::ManageMessageError& e) {
    throw Error(QS_ERROR, std::string("activate reply: ") + e.what());
  }
  const driver::ActivateReply* reply = nullptr;
  for (const auto& r : replies)
    if (auto* a = std::get_if<driver::ActivateReply>(&r)) reply = a;
  if (!reply || reply->status != 0)
    throw Error(QS_ERROR, "activation " + std::to_string(index_) + ": the device answered status " +
                              std::to_string(reply ? reply->status : 0xffffffffu));
  const uint32_t dbcId = reply->dbcId;
  auto deactivateOnError = [&] {
    driver::ManageBuffer undo = driver::ManageMessageBuilder().deactivate(dbcId).take();
    (void)node_->manage(undo);
  };
  auto window = driver::DbcWindow::map(*node_, dbcId);
  if (!window) {
    deactivateOnError();
    throw Error(QS_ERROR, "mapping DBC " + std::to_string(dbcId) + ": " + window.message());
  }
  try {
    for (HandleImpl* handle : handles_) attachStaging(*handle, dbcId);
  } catch (...) {
    deactivateOnError();
    throw;
  }
  window_ = std::make_shared<driver::DbcWindow>(std::move(window.value()));
  dbcId_ = dbcId;
  active_ = true;
  context_.log(QL_DEBUG, "'" + set_.name() + "' activation " + std::to_string(index_) + " on DBC " +
                             std::to_string(dbcId));
}

void ActivationQueue::deactivate() {
  std::vector<Task> failed;
  {
    std::lock_guard lock(ringMutex_);
    if (!active_) return;
    failAllLocked(QS_CANCELED, "the activation was deactivated", failed);
    window_.reset();
    active_ = false;
    driver::ManageBuffer message = driver::ManageMessageBuilder().deactivate(dbcId_).take();
    auto rc = node_->manage(message);
    if (!rc)
      context_.log(QL_WARN, "deactivating DBC " + std::to_string(dbcId_) + ": " + rc.message());
  }
  for (Task& task : failed) conclude(task);
}

void ActivationQueue::conclude(Task& task) {
  if (task.admitted) set_.release();
  if (task.ticket.waiting) set_.forget(task.ticket);
  set_.finished(*task.handle, task.status, task.message);
}

std::shared_ptr<driver::DbcWindow> ActivationQueue::leadableWindow() const {
  if (!config_.inlineSmallRequests) return nullptr;
  std::lock_guard lock(ringMutex_);
  return active_ ? window_ : nullptr;
}

bool ActivationQueue::isActive() const {
  std::lock_guard lock(ringMutex_);
  return active_;
}

std::size_t ActivationQueue::inFlight() const {
  std::lock_guard lock(ringMutex_);
  return inFlight_.size();
}

uint64_t ActivationQueue::inlineCost(const HandleImpl& h, bool inputs) const {
  // A notify callback is user code that may block: it never runs on the completion thread.
  if (!config_.inlineSmallRequests || (!inputs && h.viaNotify)) return UINT64_MAX;
  uint64_t bytes = 0;
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i) {
    const StagedBuffer& b = layout_.buffers[i];
    if (b.isInput != inputs || !h.present[i]) continue;
    if (!inputs && i < h.work.direct.size() && h.work.direct[i] != 0) continue;
    bytes += inputs ? deviceBytes(b, h.submittedDims[i]) : b.deviceSize;
  }
  return bytes;
}

void ActivationQueue::enqueueSubmit(HandleImpl& handle) {
  if (inlineCost(handle, true) > kInlineConversionBytes) return push(Task::submission(handle));
  {
    std::lock_guard lock(taskMutex_);
    // While stopping, push() fails the submission as a queued one would be.
    if (stopping_) return push(Task::submission(handle));
    ++inlineSubmissions_;
  }
  Task task = Task::submission(handle);
  runSubmission(task, true);
  {
    std::lock_guard lock(taskMutex_);
    --inlineSubmissions_;
  }
  inlineDone_.notify_all();
}

void ActivationQueue::push(Task task) {
  {
    std::lock_guard lock(taskMutex_);
    if (stopping_) {
      // Only reached during shutdown; the set fails the handle instead of losing it.
      if (task.status == QS_SUCCESS) task.status = QS_CANCELED;
      if (task.message.empty()) task.message = "the inference set is shutting down";
    } else {
      tasks_.push_back(std::move(task));
      taskReady_.notify_one();
      return;
    }
  }
  conclude(task);
}

void ActivationQueue::worker() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(taskMutex_);
      taskReady_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    if (task.isCompletion)
      runCompletion(*task.handle, task.status, task.code, std::move(task.message), false);
    else
      runSubmission(task, false);
  }
}

// ---- Submission: preprocess, upload (request elements + doorbell) ------------------------------

std::span<const std::byte> ActivationQueue::userBytes(const QBuffer& buffer, const std::string& name) const {
  if (buffer.type == QBUFFER_TYPE_DMABUF) {
    auto dma = context_.findDmaBuffer(buffer.handle);
    if (!dma)
      throw Error(QS_INVAL, "buffer '" + name + "': DMA handle " + std::to_string(buffer.handle) +
                                " is not a live DMA buffer of this context");
    if (buffer.offset > dma->size() || buffer.size > dma->size() - buffer.offset)
      throw Error(QS_BUFFER_SIZE, "buffer '" + name + "': offset " + std::to_string(buffer.offset) +
                                      " + size " + std::to_string(buffer.size) + " exceed the DMA buffer's " +
                                      std::to_string(dma->size()) + " bytes");
    return {reinterpret_cast<const std::byte*>(dma->data()) + buffer.offset, buffer.size};
  }
  if (buffer.buf == nullptr && buffer.size != 0)
    throw Error(QS_INVAL, "buffer '" + name + "': heap buffer with a null pointer");
  return {reinterpret_cast<const std::byte*>(buffer.buf), buffer.size};
}

void ActivationQueue::chooseDirect(HandleImpl& h) {
  const std::size_t n = layout_.buffers.size();
  h.work.direct.assign(n, 0);
  h.work.directBytes.assign(n, 0);
  if (!config_.zeroCopy) return;
  uint32_t dbcId = 0, generation = 0;
  {
    std::lock_guard lock(ringMutex_);
    if (!active_ || !window_) return;
    dbcId = dbcId_;
    generation = window_->generation();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const QBuffer& q = h.buffers[i];
    const StagedBuffer& b = layout_.buffers[i];
    if (!h.present[i] || q.type != QBUFFER_TYPE_DMABUF) continue;
    // In place only when the device format is the user's bytes, and (outputs) when the program
    // cannot produce fewer elements than the transfer brings back.
    const bool identity = b.deviceFormat.layout == ir::DeviceLayout::Flat &&
                          b.deviceFormat.elementType == b.userType &&
                          !(b.userLayout == ir::UserLayout::NHWC && h.submittedDims[i].size() == 4);
    if (!identity || (!b.isInput && layout_.rules[i].isPartialAllowed)) continue;
    auto dma = std::dynamic_pointer_cast<DmaBufferImpl>(context_.findDmaBuffer(q.handle));
    if (!dma || dma->node() != node_.get()) continue;
    const uint64_t bytes = kernels::userBufferBytes(toIrDims(h.submittedDims[i]), b.userType);
    if (q.offset > dma->size() || bytes > dma->size() - q.offset || q.offset + bytes > UINT32_MAX) continue;
    if (!dma->attachTo(this, generation, dbcId, b.isInput ? QAIC_DIR_TO_DEVICE : QAIC_DIR_FROM_DEVICE)) continue;
    h.work.direct[i] = driver::makeIova(dma->bufferObject().handle(), static_cast<uint32_t>(q.offset));
    h.work.directBytes[i] = bytes;
  }
}

void ActivationQueue::preprocess(HandleImpl& h) {
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i) {
    const StagedBuffer& b = layout_.buffers[i];
    if (!b.isInput || !h.present[i] || h.work.direct[i] != 0) continue;
    if (deviceBytes(b, h.submittedDims[i]) > b.deviceSize)
      throw Error(QS_BUFFER_DIMS, "buffer '" + b.name + "': dims " + formatDims(h.submittedDims[i]) +
                                      " need more device memory than the program reserved");
    const auto user = userBytes(h.buffers[i], b.name);
    kernels::UserBufferView view{b.name, b.userType, b.userLayout, toIrDims(h.submittedDims[i])};
    std::span<std::byte> device(h.inputBo->data() + b.stagingOffset, b.deviceSize);
    try {
      kernels::userToDevice(view, user, b.deviceFormat, device);
    } catch (const kernels::FormatError& e) {
      throw Error(QS_BUFFER_SIZE, std::string("preprocess: ") + e.what());
    }
  }
}

uint16_t ActivationQueue::nextReqIdLocked() {
  do {
    ++nextReqId_;
  } while (inFlight_.count(nextReqId_));
  return nextReqId_;
}

void ActivationQueue::upload(HandleImpl& h, Clock::time_point preprocessed) {
  std::unique_lock lock(ringMutex_);
  if (!active_ || !window_)
    throw Error(QS_CANCELED, "activation " + std::to_string(index_) + " of '" + set_.name() +
                                 "' is not active");
  RequestPlan plan;
  plan.sequence = nextSequence_++;
  plan.reqId = nextReqIdLocked();
  plan.inputBo = h.inputBo->handle();
  plan.outputBo = h.outputBo->handle();
  plan.present = h.present;
  plan.dims = h.submittedDims;
  plan.direct = h.work.direct;
  plan.directBytes = h.work.directBytes;
  writeRequestDescriptor(std::span<std::byte>(h.inputBo->data() + layout_.requestDescriptorStaging,
                                              driver::kDescriptorBytes),
                         layout_, plan);
  Request request{&h, buildRequest(layout_, plan), {}, config_.retries};
  if (request.elements.size() >= window_->queueSize())
    throw Error(QS_INCOMPATIBLE, "a request of " + std::to_string(request.elements.size()) +
                                     " elements does not fit a ring of " +
                                     std::to_string(window_->queueSize()));
  // The ring is sized for every handle's request at once, so waiting for room is rare; it is
  // bounded by the data-path timeout.
  const auto giveUp = Clock::now() + config_.dataPathTimeout;
  while (window_->requestSlotsFree() < request.elements.size()) {
    if (ringChanged_.wait_until(lock, std::min(giveUp, Clock::now() + std::chrono::milliseconds(1))) ==
            std::cv_status::timeout &&
        Clock::now() >= giveUp)
      throw Error(QS_TIMEDOUT, "the request ring of DBC " + std::to_string(dbcId_) + " stayed full for " +
                                   std::to_string(config_.dataPathTimeout.count()) + " ms");
    if (!active_ || !window_) throw Error(QS_CANCELED, "the activation was deactivated");
  }
  // Stamped before the doorbell: the completion side may read them as soon as it rings.
  h.work.uploadedAt = Clock::now();
  h.work.stages[static_cast<std::size_t>(Stage::Upload)] = h.work.uploadedAt - preprocessed;
  request.deadline = h.work.uploadedAt + config_.dataPathTimeout;
  auto rc = window_->submit(request.elements);
  if (!rc)
    throw Error(rc.error() == ENODEV ? QS_DEV_REMOVED : QS_ERROR,
                "submitting to DBC " + std::to_string(dbcId_) + ": " + rc.message());
  inFlight_.emplace(plan.reqId, std::move(request));
}

void ActivationQueue::park(Task task) {
  {
    std::lock_guard lock(taskMutex_);
    if (!stopping_) {
      parked_.push_back(std::move(task));
      return;
    }
  }
  task.status = QS_CANCELED;
  task.message = "the inference set is shutting down";
  conclude(task);
}

void ActivationQueue::wakeParked() {
  std::lock_guard lock(taskMutex_);
  if (stopping_ || parked_.empty()) return;
  for (Task& task : parked_) tasks_.push_back(std::move(task));
  parked_.clear();
  taskReady_.notify_all();
}

void ActivationQueue::runSubmission(Task& task, bool onCaller) {
  HandleImpl& h = *task.handle;
  try {
    if (!set_.tryAdmit(task.ticket)) {
      park(std::move(task));
      return;
    }
  } catch (const Error& e) {
    set_.finished(h, e.status(), e.what());
    return;
  }
  const auto start = Clock::now();
  h.work.stages[static_cast<std::size_t>(Stage::QueueWait)] = start - h.submittedAt;
  try {
    chooseDirect(h);
    preprocess(h);
    const auto preprocessed = Clock::now();
    h.work.stages[static_cast<std::size_t>(Stage::Preprocess)] = preprocessed - start;
    upload(h, preprocessed);  // after this the completion side owns h.work
  } catch (const Error& e) {
    fail(h, e.status(), e.what(), onCaller);
  } catch (const std::exception& e) {
    fail(h, QS_ERROR, e.what(), onCaller);
  }
}

void ActivationQueue::fail(HandleImpl& h, QStatus status, std::string message, bool onCaller) {
  if (onCaller) {
    // The error handler and a notify callback are user code: they run on a pipeline thread,
    // never inside the application's submit() (which may hold the locks they take).
    push(Task::completion(&h, status, 0, std::move(message)));
    return;
  }
  set_.release();
  set_.finished(h, status, message);
}

// ---- Completion: interrupt, responses, deadlines ----------------------------------------------

Clock::time_point ActivationQueue::nextDeadline() const {
  std::lock_guard lock(ringMutex_);
  auto next = Clock::time_point::max();
  for (const auto& [id, request] : inFlight_) next = std::min(next, request.deadline);
  return next;
}

void ActivationQueue::failAllLocked(QStatus status, const std::string& why, std::vector<Task>& out) {
  for (auto& [id, request] : inFlight_) out.push_back(Task::completion(request.handle, status, 0, why));
  inFlight_.clear();
  ringChanged_.notify_all();
}

void ActivationQueue::onWake() {
  std::vector<Task> done;
  {
    std::lock_guard lock(ringMutex_);
    if (!active_ || !window_) return;
    std::array<driver::ResponseElement, 64> batch;
    for (;;) {
      auto taken = window_->takeResponses(batch);
      if (!taken) {
        failAllLocked(QS_DEV_REMOVED, "reading responses of DBC " + std::to_string(dbcId_) + ": " +
                                          taken.message(), done);
        break;
      }
      for (std::size_t i = 0; i < *taken; ++i) {
        auto it = inFlight_.find(batch[i].reqId);
        if (it == inFlight_.end()) continue;  // a request already retried or failed
        const auto now = Clock::now();
        it->second.handle->work.completedAt = now;
        done.push_back(Task::completion(it->second.handle, QS_SUCCESS, batch[i].completionCode, {}));
        inFlight_.erase(it);
      }
      // Stop only on an empty read: the device signals only when the FIFO goes from empty to
      // non-empty, so a response that lands while this batch is taken raises no new interrupt.
      if (*taken == 0) break;
    }
    const auto status = window_->deviceStatus();
    if (status == driver::DeviceStatus::Removed || status == driver::DeviceStatus::Stopped)
      failAllLocked(QS_DEV_REMOVED, "device " + std::to_string(device_) + " was removed", done);
    else if (status == driver::DeviceStatus::Resetting)
      failAllLocked(QS_DEV_RESET, "device " + std::to_string(device_) + " reset while the request was in flight", done);

    const auto now = Clock::now();
    for (auto it = inFlight_.begin(); it != inFlight_.end();) {
      Request& request = it->second;
      if (request.deadline > now) {
        ++it;
        continue;
      }
      if (request.retriesLeft > 0) {
        // Resubmit under a new req_id so a late answer to the old one is ignored.
        const uint16_t reqId = nextReqIdLocked();
        for (auto& element : request.elements) element.reqId = reqId;
        --request.retriesLeft;
        request.deadline = now + config_.dataPathTimeout;
        context_.log(QL_WARN, "'" + set_.name() + "': request " + std::to_string(request.handle->requestId) +
                                  " timed out after " + std::to_string(config_.dataPathTimeout.count()) +
                                  " ms, retrying (" + std::to_string(request.retriesLeft) + " left)");
        if (window_->requestSlotsFree() >= request.elements.size() && window_->submit(request.elements)) {
          inFlight_.emplace(reqId, std::move(request));
          it = inFlight_.erase(it);
          continue;
        }
        // No room to retry now: keep the old entry and try again at its next deadline.
        ++it;
        continue;
      }
      done.push_back(Task::completion(request.handle, QS_TIMEDOUT, 0,
                                      "no completion within " + std::to_string(config_.dataPathTimeout.count()) +
                                          " ms after " + std::to_string(config_.retries) + " retries"));
      it = inFlight_.erase(it);
    }
    ringChanged_.notify_all();
  }
  for (Task& task : done) {
    // Successes only: a failure calls the context's error handler (user code), which must not
    // hold up this thread and with it every other completion and deadline of the queue.
    const bool success = task.status == QS_SUCCESS && task.code == 0;
    if (task.isCompletion && success && inlineCost(*task.handle, false) <= kInlineConversionBytes)
      runCompletion(*task.handle, task.status, task.code, std::move(task.message), true);
    else
      push(std::move(task));
  }
  wakeParked();  // parked submissions re-check their deadlines at least this often
}

void ActivationQueue::postprocess(HandleImpl& h) {
  const ResponseInfo info = readResponseDescriptor(
      std::span<const std::byte>(h.outputBo->data() + layout_.responseDescriptorStaging,
                                 driver::kDescriptorBytes),
      layout_);
  if (info.status != 0) {
    std::string message = std::string("the program reported ") + driver::completionCodeName(info.status);
    if (const std::string why = readResponseDiagnostic(
            std::span<const std::byte>(h.outputBo->data() + layout_.responseDescriptorStaging, driver::kDescriptorBytes),
            layout_);
        !why.empty())
      message += ": " + why;
    throw Error(statusForCompletion(info.status), message);
  }
  const auto downloaded = Clock::now();
  h.work.stages[static_cast<std::size_t>(Stage::Download)] = downloaded - h.work.completedAt;
  h.work.outputDims.assign(layout_.buffers.size(), {});
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i) {
    const StagedBuffer& b = layout_.buffers[i];
    if (b.isInput || !h.present[i]) continue;
    const IoDims dims = info.present[i] ? info.dims[i] : h.submittedDims[i];
    const auto user = userBytes(h.buffers[i], b.name);
    const std::size_t needed = kernels::userBufferBytes(toIrDims(dims), b.userType);
    if (needed > user.size())
      throw Error(QS_BUFFER_SIZE, "output '" + b.name + "': the program produced dims " + formatDims(dims) +
                                      " (" + std::to_string(needed) + " bytes), the buffer holds " +
                                      std::to_string(user.size()));
    if (deviceBytes(b, dims) > b.deviceSize)
      throw Error(QS_DEVICE_ERROR, "output '" + b.name + "': response dims " + formatDims(dims) +
                                       " exceed the buffer's device size");
    if (h.work.direct[i] != 0) {  // the device wrote the user's DMA buffer itself
      h.work.outputDims[i] = dims;
      continue;
    }
    kernels::UserBufferView view{b.name, b.userType, b.userLayout, toIrDims(dims)};
    std::span<std::byte> out(const_cast<std::byte*>(user.data()), needed);
    try {
      kernels::deviceToUser(b.deviceFormat,
                            std::span<const std::byte>(h.outputBo->data() + b.stagingOffset, b.deviceSize),
                            view, out);
    } catch (const kernels::FormatError& e) {
      throw Error(QS_DEVICE_ERROR, std::string("postprocess: ") + e.what());
    }
    h.work.outputDims[i] = dims;
  }
  h.work.stages[static_cast<std::size_t>(Stage::Postprocess)] = Clock::now() - downloaded;
}

void ActivationQueue::runCompletion(HandleImpl& h, QStatus status, uint16_t code, std::string message,
                                    bool onCompletionThread) {
  const bool reachedDevice = status == QS_SUCCESS || code != 0;
  if (reachedDevice) {
    h.work.stages[static_cast<std::size_t>(Stage::Execute)] = h.work.completedAt - h.work.uploadedAt;
    if (code != 0) {
      status = statusForCompletion(code);
      message = std::string("the device completed the request with ") + driver::completionCodeName(code);
      if (code == driver::DBC_COMPLETION_PROGRAM_FAILED) {
        const std::string why = readResponseDiagnostic(
            std::span<const std::byte>(h.outputBo->data() + layout_.responseDescriptorStaging, driver::kDescriptorBytes),
            layout_);
        if (!why.empty()) message += ": " + why;
      }
    } else {
      try {
        postprocess(h);
      } catch (const Error& e) {
        if (onCompletionThread) {
          // Concluded (error handler included) on a pipeline thread; it no longer reaches here.
          push(Task::completion(&h, e.status(), 0, e.what()));
          return;
        }
        status = e.status();
        message = e.what();
      }
    }
  }
  set_.release();
  set_.finished(h, status, message);
}

}  // namespace qaic::rt::engine
