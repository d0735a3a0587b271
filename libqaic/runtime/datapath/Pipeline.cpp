// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/Pipeline.hpp"

#include <utility>

#include "kernels/format/DeviceFormat.hpp"
#include "runtime/datapath/RequestBuilder.hpp"
#include "runtime/objects/ContextImpl.hpp"
#include "runtime/objects/DmaBufferImpl.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {

namespace {

const char* const kShuttingDown = "the inference set is shutting down";

// The pipeline whose task this pool thread runs, and whether that task shut the pipeline down
// (user code in it destroyed the set): the job then no longer touches the pipeline.
thread_local const Pipeline* tServing = nullptr;
thread_local bool tServingShutDown = false;

std::size_t stageIndex(Stage stage) { return static_cast<std::size_t>(stage); }

}  // namespace

Pipeline::Task Pipeline::Task::submission(InferenceHandleImpl& handle) {
  Task task;
  task.handle = &handle;
  return task;
}

Pipeline::Task Pipeline::Task::completion(EndedRequest end) {
  Task task;
  task.handle = end.handle;
  task.isCompletion = true;
  task.admitted = true;
  task.end = std::move(end);
  return task;
}

Pipeline::Pipeline(PipelineOwner& owner, ContextImpl& context, const std::string& setName, uint32_t index, QID device,
                   std::shared_ptr<const driver::DeviceNode> node, const ProgramLayout& layout, PipelineConfig config)
    : owner_(owner),
      context_(context),
      pool_(context.workers()),
      setName_(setName),
      index_(index),
      device_(device),
      node_(node),
      layout_(layout),
      config_(config),
      ring_(*this, context, std::move(node), "activation " + std::to_string(index) + " of '" + setName + "'",
            config.ring) {}

Pipeline::~Pipeline() {
  shutdown();
  deactivate();
}

void Pipeline::shutdown() {
  {
    std::unique_lock lock(taskMutex_);
    if (stopping_ && jobs_ == 0) return;
    stopping_ = true;
    // Queued jobs go unrun; a running one ends after its task (each is bounded by the data path's
    // timeouts), and finds stopping_ set.
    jobs_ -= pool_.cancel(this);
    if (tServing == this && !tServingShutDown) {
      tServingShutDown = true;  // this very job: it returns without touching the pipeline again
      --jobs_;
    }
    jobsDone_.wait(lock, [&] { return jobs_ == 0; });
  }
  {
    // A submission running on its caller's thread reaches the ring (or fails) before the
    // in-flight requests are failed below; it is bounded by the data-path timeout.
    std::unique_lock lock(taskMutex_);
    inlineDone_.wait(lock, [&] { return inlineSubmissions_ == 0; });
  }
  ring_.stop();  // what is in flight comes back through requestsEnded and is concluded there
  std::deque<Task> pending;
  {
    std::lock_guard lock(taskMutex_);
    pending.swap(tasks_);
    for (Task& task : parked_) pending.push_back(std::move(task));
    parked_.clear();
  }
  for (Task& task : pending) {
    task.end.status = QS_CANCELED;
    task.end.message = kShuttingDown;
    conclude(task);
  }
}

// ---- Staging and activation -------------------------------------------------------------------

void Pipeline::addHandle(InferenceHandleImpl& handle) {
  auto staging = [&](uint64_t bytes) {
    auto bo = driver::BufferObject::create(*node_, bytes);
    if (!bo)
      throw Error(
          statusForBufferObjectErrno(bo.error()),
          "staging buffer for handle " + std::to_string(handle.index()) + " on " + node_->name() + ": " + bo.message());
    return std::move(bo.value());
  };
  handle.inputBo.emplace(staging(layout_.inputStagingBytes));
  handle.outputBo.emplace(staging(layout_.outputStagingBytes));
  handles_.push_back(&handle);
}

std::vector<SliceAttachment> Pipeline::stagingAttachments() const {
  auto slice = [](uint64_t offset, uint64_t size, uint64_t deviceAddress) {
    qaic_attach_slice_entry entry{};
    entry.offset = offset;
    entry.size = size;
    entry.dev_addr = deviceAddress;
    return entry;
  };
  // The request descriptor, then the inputs, to the device; the outputs, then the response
  // descriptor, back (the order of a request's elements).
  std::vector<qaic_attach_slice_entry> in{
      slice(layout_.requestDescriptorStaging, driver::kDescriptorBytes, layout_.requestDescriptorOffset)};
  std::vector<qaic_attach_slice_entry> out;
  for (const StagedBuffer& b : layout_.buffers) {
    if (b.deviceSize == 0) continue;
    (b.isInput ? in : out).push_back(slice(b.stagingOffset, b.deviceSize, b.deviceOffset));
  }
  out.push_back(slice(layout_.responseDescriptorStaging, driver::kDescriptorBytes, layout_.responseDescriptorOffset));
  std::vector<SliceAttachment> attachments;
  for (const InferenceHandleImpl* handle : handles_) {
    const std::string what = "the staging of handle " + std::to_string(handle->index());
    attachments.push_back({&*handle->inputBo, QAIC_DIR_TO_DEVICE, in, what});
    attachments.push_back({&*handle->outputBo, QAIC_DIR_FROM_DEVICE, out, what});
  }
  return attachments;
}

void Pipeline::activate(uint32_t loadId, uint32_t resourceGroup) {
  ring_.activate(loadId, layout_.programIndex, layout_.numCores, stagingAttachments(), resourceGroup);
}

void Pipeline::deactivate() { ring_.deactivate(); }

// ---- Tasks and threads ------------------------------------------------------------------------

void Pipeline::conclude(Task& task) {
  if (task.admitted) owner_.release();
  if (task.ticket.waiting) owner_.forget(task.ticket);
  owner_.finished(*task.handle, task.end.status, task.end.message);
}

void Pipeline::push(Task task) {
  {
    std::lock_guard lock(taskMutex_);
    if (!stopping_) {
      if (!task.isCompletion) {
        task.holdsOrder = true;
        ++submissionsAhead_;
      }
      tasks_.push_back(std::move(task));
      scheduleLocked();
      return;
    }
  }
  // Only reached during shutdown; the set fails the handle instead of losing it.
  if (task.end.status == QS_SUCCESS) task.end.status = QS_CANCELED;
  if (task.end.message.empty()) task.end.message = kShuttingDown;
  conclude(task);
}

void Pipeline::park(Task task) {
  {
    std::lock_guard lock(taskMutex_);
    if (!stopping_) {
      parked_.push_back(std::move(task));
      armParkTimerLocked();
      return;
    }
  }
  task.end.status = QS_CANCELED;
  task.end.message = kShuttingDown;
  conclude(task);
}

void Pipeline::wakeParked() {
  std::lock_guard lock(taskMutex_);
  if (stopping_ || parked_.empty()) return;
  for (Task& task : parked_) tasks_.push_back(std::move(task));
  parked_.clear();
  scheduleLocked();
}

void Pipeline::scheduleLocked() {
  const std::size_t limit = std::max<uint32_t>(1, config_.threads);
  while (!stopping_ && servers_ < limit && waitingServers_ < tasks_.size()) {
    ++jobs_, ++servers_, ++waitingServers_;
    pool_.post(this, [this] { serveOne(); });
  }
}

void Pipeline::jobEndedLocked() {
  if (--jobs_ == 0) jobsDone_.notify_all();
}

void Pipeline::armParkTimerLocked() {
  if (parkTimer_ || stopping_) return;
  parkTimer_ = true;
  ++jobs_;
  pool_.postAt(this, Clock::now() + CompletionEngine::kIdleWake, [this] {
    std::lock_guard lock(taskMutex_);
    parkTimer_ = false;
    if (!stopping_ && !parked_.empty()) {
      for (Task& parked : parked_) tasks_.push_back(std::move(parked));
      parked_.clear();
      scheduleLocked();
    }
    jobEndedLocked();
  });
}

void Pipeline::serveOne() {
  Task task;
  {
    std::lock_guard lock(taskMutex_);
    --waitingServers_;
    if (stopping_ || tasks_.empty()) {
      --servers_;
      jobEndedLocked();
      return;
    }
    task = std::move(tasks_.front());
    tasks_.pop_front();
  }
  tServing = this;
  tServingShutDown = false;
  if (task.isCompletion)
    runCompletion(task.end, false);
  else
    runSubmission(task, false);
  tServing = nullptr;
  if (tServingShutDown) return;
  std::lock_guard lock(taskMutex_);
  if (!stopping_ && waitingServers_ < tasks_.size()) {
    // Behind the other pipelines' jobs: activations share the pool's threads in turn.
    ++waitingServers_;
    pool_.post(this, [this] { serveOne(); });
    return;
  }
  --servers_;
  jobEndedLocked();
}

uint64_t Pipeline::inlineCost(const InferenceHandleImpl& h, bool inputs) const {
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

void Pipeline::submit(InferenceHandleImpl& handle) {
  const bool small = inlineCost(handle, true) <= kInlineConversionBytes;
  {
    std::unique_lock lock(taskMutex_);
    // While stopping, push() fails the submission as a queued one would be. A small request
    // behind a queued one is queued too: run here, it would reach the device first.
    if (!small || stopping_ || submissionsAhead_ > 0) {
      lock.unlock();
      return push(Task::submission(handle));
    }
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

// ---- Submission: preprocess, upload (request elements + doorbell) ------------------------------

void Pipeline::runSubmission(Task& task, bool onCaller) {
  InferenceHandleImpl& h = *task.handle;
  // On the ring, failed or parked: either way no longer ahead of later submissions.
  struct OrderRelease {
    Pipeline& pipeline;
    bool held;
    ~OrderRelease() {
      if (!held) return;
      std::lock_guard lock(pipeline.taskMutex_);
      --pipeline.submissionsAhead_;
    }
  } orderRelease{*this, std::exchange(task.holdsOrder, false)};
  try {
    if (!owner_.admit(task.ticket)) {
      park(std::move(task));
      return;
    }
  } catch (const Error& e) {
    owner_.finished(h, e.status(), e.what());
    return;
  }
  const auto start = Clock::now();
  const bool preciseCpu = !onCaller;  // a small request runs inline: see stageCpuClock
  const auto cpuStart = stageCpuClock(preciseCpu);
  // A request run on the submitting thread was never queued.
  if (!onCaller) h.work.stages[stageIndex(Stage::QueueWait)] = {start - h.submittedAt, {}, true};
  try {
    chooseDirect(h);
    preprocess(h);
    h.work.preprocessedAt = Clock::now();
    const auto cpuPreprocessed = stageCpuClock(preciseCpu);
    h.work.stages[stageIndex(Stage::Preprocess)] = {h.work.preprocessedAt - start, cpuPreprocessed - cpuStart, true};
    upload(h, cpuPreprocessed, preciseCpu);  // after this the completion side owns h.work
  } catch (const Error& e) {
    fail(h, e.status(), e.what(), onCaller);
  } catch (const std::exception& e) {
    fail(h, QS_ERROR, e.what(), onCaller);
  }
}

void Pipeline::fail(InferenceHandleImpl& h, QStatus status, std::string message, bool onCaller) {
  if (onCaller) {
    // The error handler and a notify callback are user code: they run on a pipeline thread,
    // never inside the application's submit() (which may hold the locks they take).
    push(Task::completion({&h, status, 0, std::move(message), {}, {}}));
    return;
  }
  owner_.release();
  owner_.finished(h, status, message);
}

std::span<const std::byte> Pipeline::userBytesOf(const QBuffer& buffer, const DmaBufferImpl* dma,
                                                 const std::string& name) const {
  if (buffer.type == QBUFFER_TYPE_DMABUF) {
    if (dma == nullptr) throw Error(QS_INVAL, "buffer '" + name + "': DMA handle not resolved");
    if (buffer.offset > dma->size() || buffer.size > dma->size() - buffer.offset)
      throw Error(QS_BUFFER_SIZE, "buffer '" + name + "': offset " + std::to_string(buffer.offset) + " + size " +
                                      std::to_string(buffer.size) + " exceed the DMA buffer's " +
                                      std::to_string(dma->size()) + " bytes");
    return {reinterpret_cast<const std::byte*>(dma->data()) + buffer.offset, buffer.size};
  }
  if (buffer.buf == nullptr && buffer.size != 0)
    throw Error(QS_INVAL, "buffer '" + name + "': heap buffer with a null pointer");
  return {reinterpret_cast<const std::byte*>(buffer.buf), buffer.size};
}

void Pipeline::chooseDirect(InferenceHandleImpl& h) {
  const std::size_t n = layout_.buffers.size();
  h.work.direct.assign(n, 0);
  h.work.directBytes.assign(n, 0);
  h.work.dma.assign(n, nullptr);
  bool anyDma = false;
  for (std::size_t i = 0; i < n; ++i)
    if (h.present[i] && h.buffers[i].type == QBUFFER_TYPE_DMABUF) {
      h.work.dma[i] = context_.dmaBufferOn(h.buffers[i].handle, node_, "buffer '" + layout_.buffers[i].name + "'");
      anyDma = true;
    }
  if (!config_.zeroCopy || !anyDma) return;  // (the ring's target costs its lock)
  const auto target = ring_.target();
  if (!target) return;
  for (std::size_t i = 0; i < n; ++i) {
    const QBuffer& q = h.buffers[i];
    const StagedBuffer& b = layout_.buffers[i];
    if (!h.present[i] || q.type != QBUFFER_TYPE_DMABUF) continue;
    // In place only when the device format is the user's bytes, and (outputs) when the program
    // cannot produce fewer elements than the transfer brings back.
    const bool identity = b.deviceFormat.layout == ir::DeviceLayout::Flat && b.deviceFormat.elementType == b.userType &&
                          !(b.userLayout == ir::UserLayout::NHWC && h.submittedDims[i].size() == 4);
    if (!identity || (!b.isInput && layout_.rules[i].isPartialAllowed)) continue;
    // Another device's buffer, a memfd or any dma-buf was imported into this device: the
    // transfer reads or writes the same pages.
    const auto& dma = h.work.dma[i];
    const uint64_t bytes = userBytes(b, h.submittedDims[i]);
    if (q.offset > dma->size() || bytes > dma->size() - q.offset || q.offset + bytes > UINT32_MAX) continue;
    if (!dma->attachTo(&ring_, target->generation, target->dbcId,
                       b.isInput ? QAIC_DIR_TO_DEVICE : QAIC_DIR_FROM_DEVICE))
      continue;
    h.work.direct[i] = driver::makeIova(dma->bufferObject().handle(), static_cast<uint32_t>(q.offset));
    h.work.directBytes[i] = bytes;
  }
}

void Pipeline::preprocess(InferenceHandleImpl& h) {
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i) {
    const StagedBuffer& b = layout_.buffers[i];
    if (!b.isInput || !h.present[i] || h.work.direct[i] != 0) continue;
    const uint64_t bytes = deviceBytes(b, h.submittedDims[i]);
    if (bytes > b.deviceSize)
      throw Error(QS_BUFFER_DIMS, "buffer '" + b.name + "': dims " + formatDims(h.submittedDims[i]) +
                                      " need more device memory than the program reserved");
    const kernels::UserBufferView view{b.name, b.userType, b.userLayout, toIrDims(h.submittedDims[i])};
    std::span<std::byte> device(h.inputBo->data() + b.stagingOffset, b.deviceSize);
    try {
      kernels::userToDevice(view, userBytesOf(h.buffers[i], h.work.dma[i].get(), b.name), b.deviceFormat, device);
    } catch (const kernels::FormatError& e) {
      throw Error(QS_BUFFER_SIZE, std::string("preprocess: ") + e.what());
    }
    h.work.hostCopiedBytes += bytes;
  }
}

void Pipeline::upload(InferenceHandleImpl& h, Clock::duration cpuStart, bool preciseCpu) {
  RequestPlan plan;
  plan.sequence = nextSequence_.fetch_add(1);
  plan.inputBo = h.inputBo->handle();
  plan.outputBo = h.outputBo->handle();
  plan.present = h.present;
  plan.dims = h.submittedDims;
  plan.direct = h.work.direct;
  plan.directBytes = h.work.directBytes;
  plan.resetState = h.resetState;
  writeRequestDescriptor(
      std::span<std::byte>(h.inputBo->data() + layout_.requestDescriptorStaging, driver::kDescriptorBytes), layout_,
      plan);
  auto elements = buildRequest(layout_, plan);
  // The wall-clock time of the transfer is known once the device reports when the program
  // started (runCompletion); the CPU time is this thread's, up to handing the request over.
  h.work.stages[stageIndex(Stage::Upload)].cpu = stageCpuClock(preciseCpu) - cpuStart;
  ring_.submit(h, std::move(elements));
}

// ---- Completion: download, postprocess --------------------------------------------------------

void Pipeline::requestsEnded(std::vector<EndedRequest>& ended) {
  for (EndedRequest& end : ended) {
    // Successes only: a failure calls the context's error handler (user code), which must not
    // hold up the completion thread and with it every other completion and deadline of the ring.
    const bool success = end.status == QS_SUCCESS && end.code == 0;
    if (success && inlineCost(*end.handle, false) <= kInlineConversionBytes)
      runCompletion(end, true);
    else
      push(Task::completion(std::move(end)));
  }
}

std::string Pipeline::responseDiagnostic(const InferenceHandleImpl& h) const {
  return readResponseDiagnostic(
      std::span<const std::byte>(h.outputBo->data() + layout_.responseDescriptorStaging, driver::kDescriptorBytes),
      layout_);
}

void Pipeline::postprocess(InferenceHandleImpl& h, Clock::time_point completedAt, bool preciseCpu) {
  const auto cpuStart = stageCpuClock(preciseCpu);
  const ResponseInfo info = readResponseDescriptor(
      std::span<const std::byte>(h.outputBo->data() + layout_.responseDescriptorStaging, driver::kDescriptorBytes),
      layout_);
  const auto downloaded = Clock::now();
  const auto cpuDownloaded = stageCpuClock(preciseCpu);
  auto& stages = h.work.stages;
  stages[stageIndex(Stage::Download)] = {downloaded - completedAt, cpuDownloaded - cpuStart, true};
  // With the device's program times, the doorbell-to-wake-up span splits into the inputs'
  // transfer, the run and the outputs' transfer (seed 002's stages 2-4).
  if (info.programRun) {
    const auto [programStart, programEnd] = *info.programRun;
    if (h.work.preprocessedAt <= programStart && programEnd <= downloaded) {
      stages[stageIndex(Stage::Upload)].real = programStart - h.work.preprocessedAt;
      stages[stageIndex(Stage::Execute)].real = programEnd - programStart;
      stages[stageIndex(Stage::Download)].real = downloaded - programEnd;
    }
  }
  if (info.status != 0) {
    std::string message = std::string("the program reported ") + driver::completionCodeName(info.status);
    if (const std::string why = responseDiagnostic(h); !why.empty()) message += ": " + why;
    throw Error(statusForCompletion(info.status), message);
  }
  h.work.outputDims.assign(layout_.buffers.size(), {});
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i) {
    const StagedBuffer& b = layout_.buffers[i];
    if (b.isInput || !h.present[i]) continue;
    const IoDims dims = info.present[i] ? info.dims[i] : h.submittedDims[i];
    const auto user = userBytesOf(h.buffers[i], h.work.dma[i].get(), b.name);
    const uint64_t needed = userBytes(b, dims);
    if (needed > user.size())
      throw Error(QS_BUFFER_SIZE, "output '" + b.name + "': the program produced dims " + formatDims(dims) + " (" +
                                      std::to_string(needed) + " bytes), the buffer holds " +
                                      std::to_string(user.size()));
    if (deviceBytes(b, dims) > b.deviceSize)
      throw Error(QS_DEVICE_ERROR,
                  "output '" + b.name + "': response dims " + formatDims(dims) + " exceed the buffer's device size");
    if (h.work.direct[i] == 0) {  // else the device wrote the user's DMA buffer itself
      const kernels::UserBufferView view{b.name, b.userType, b.userLayout, toIrDims(dims)};
      std::span<std::byte> out(const_cast<std::byte*>(user.data()), needed);
      try {
        kernels::deviceToUser(
            b.deviceFormat, std::span<const std::byte>(h.outputBo->data() + b.stagingOffset, b.deviceSize), view, out);
      } catch (const kernels::FormatError& e) {
        throw Error(QS_DEVICE_ERROR, std::string("postprocess: ") + e.what());
      }
      h.work.hostCopiedBytes += needed;
    }
    h.work.outputDims[i] = dims;
  }
  stages[stageIndex(Stage::Postprocess)] = {Clock::now() - downloaded, stageCpuClock(preciseCpu) - cpuDownloaded, true};
}

void Pipeline::runCompletion(EndedRequest& end, bool onCompletionThread) {
  InferenceHandleImpl& h = *end.handle;
  QStatus status = end.status;
  std::string message = std::move(end.message);
  auto& stages = h.work.stages;
  if (end.submittedAt != Clock::time_point{}) {
    stages[stageIndex(Stage::Upload)].real = end.submittedAt - h.work.preprocessedAt;
    stages[stageIndex(Stage::Upload)].ran = true;
  }
  if (status == QS_SUCCESS) {  // the device answered
    stages[stageIndex(Stage::Execute)] = {end.completedAt - end.submittedAt, {}, true};
    if (end.code != 0) {
      status = statusForCompletion(end.code);
      message = "device " + std::to_string(device_) + " completed the request with " +
                driver::completionCodeName(end.code);
      if (end.code == driver::DBC_COMPLETION_PROGRAM_FAILED) {
        if (const std::string why = responseDiagnostic(h); !why.empty()) message += ": " + why;
      }
    } else {
      try {
        postprocess(h, end.completedAt, !onCompletionThread);
      } catch (const Error& e) {
        if (onCompletionThread) {
          // Concluded (error handler included) on a pipeline thread; it no longer reaches here.
          push(Task::completion({&h, e.status(), 0, e.what(), {}, {}}));
          return;
        }
        status = e.status();
        message = e.what();
      }
    }
  }
  owner_.release();
  owner_.finished(h, status, message);
}

}  // namespace qaic::rt
