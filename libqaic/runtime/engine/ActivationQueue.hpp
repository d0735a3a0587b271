// One activation of a program and the queue that feeds it: the DBC and its mapped window, the
// eventfd interrupt and its CompletionEngine, the in-flight requests with their deadlines, the
// staging buffer objects of the handles assigned to it, and numThreadsPerQueue pipeline threads
// that run seed 002's stages (preprocess + upload for a submission; download + postprocess for
// a completion). Owned by a SetImpl; destroyed only after its requests have drained or failed.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CompletionEngine.hpp"
#include "HandleImpl.hpp"
#include "InterruptLeader.hpp"
#include "ProgramLayout.hpp"
#include "RequestBuilder.hpp"
#include "driver/CompletionEvent.hpp"
#include "driver/DbcWindow.hpp"
#include "driver/DeviceNode.hpp"

namespace qaic::rt::engine {

class SetImpl;
class ContextImpl;

struct QueueConfig {
  uint32_t threads = 4;
  std::chrono::milliseconds dataPathTimeout{5000};
  uint32_t retries = 5;
  uint32_t queueSize = driver::kDefaultQueueSize;  // ring elements
  // DMA buffers in the device's own format are transferred in place. Off for group members,
  // whose DBC changes with every switch (a BO stays sliced to one DBC).
  bool zeroCopy = true;
  // Small requests skip the pipeline threads: the submitting thread preprocesses and uploads,
  // the completion thread postprocesses (a hand-off to another thread costs more than the work).
  // Off for group members, whose admission may park a submission or switch activations.
  bool inlineSmallRequests = true;
};

// Conversion bytes up to which a request's preprocessing or postprocessing runs inline.
inline constexpr uint64_t kInlineConversionBytes = 64 * 1024;

class ActivationQueue {
 public:
  ActivationQueue(SetImpl& set, uint32_t index, QID device,
                  std::shared_ptr<const driver::DeviceNode> node, const ProgramLayout& layout,
                  QueueConfig config);
  ~ActivationQueue();
  ActivationQueue(const ActivationQueue&) = delete;
  ActivationQueue& operator=(const ActivationQueue&) = delete;

  uint32_t index() const { return index_; }
  QID device() const { return device_; }
  // Creates the staging BOs of `handle` (once); they are attached on activate().
  void addHandle(HandleImpl& handle);

  // ACTIVATE the loaded program, map the DBC window, attach every handle's staging.
  // Throws Error (QS_NO_RESOURCES for ENOSPC, QS_INCOMPATIBLE, QS_DEV_REMOVED, QS_ERROR).
  void activate(uint32_t loadId);
  // DEACTIVATE; requests still in flight fail with QS_CANCELED.
  void deactivate();
  bool isActive() const;
  std::size_t inFlight() const;

  // Hands a submitted handle to the pipeline threads.
  void enqueueSubmit(HandleImpl& handle);
  // Retries submissions parked while waiting for an over-subscription group.
  void wakeParked();
  // Stops the threads and the completion engine (in-flight requests fail with QS_CANCELED).
  void shutdown();

  // A synchronous waiter's way to the interrupt (InterruptLeader). The window is null when
  // the queue is inactive or belongs to a group (whose activation may switch under a waiter).
  std::shared_ptr<driver::DbcWindow> leadableWindow() const;
  InterruptLeader& interruptLeader() { return leader_; }

 private:
  struct Task {
    HandleImpl* handle = nullptr;
    bool isCompletion = false;
    bool admitted = false;  // passed SetImpl::tryAdmit, so it owes one SetImpl::release
    AdmitTicket ticket;
    QStatus status = QS_SUCCESS;
    uint16_t code = 0;
    std::string message;

    static Task submission(HandleImpl& handle) {
      Task task;
      task.handle = &handle;
      return task;
    }
    // A request that reached the ring (hence was admitted) and ended with `code` or `status`.
    static Task completion(HandleImpl* handle, QStatus status, uint16_t code, std::string message) {
      Task task;
      task.handle = handle;
      task.isCompletion = true;
      task.admitted = true;
      task.status = status;
      task.code = code;
      task.message = std::move(message);
      return task;
    }
  };
  struct Request {
    HandleImpl* handle = nullptr;
    std::vector<driver::RequestElement> elements;
    Clock::time_point deadline{};
    uint32_t retriesLeft = 0;
  };

  void worker();
  void push(Task task);
  void conclude(Task& task);  // finish without running the task
  // onCaller: running on the application's thread inside submit() (failures are deferred).
  void runSubmission(Task& task, bool onCaller);
  // A submission that failed before reaching the ring: concluded here or on a pipeline thread.
  void fail(HandleImpl& handle, QStatus status, std::string message, bool onCaller);
  void park(Task task);
  // onCompletionThread: a success finished inline (a failure found then is deferred).
  void runCompletion(HandleImpl& handle, QStatus status, uint16_t code, std::string message,
                     bool onCompletionThread);
  void chooseDirect(HandleImpl& handle);
  // Device-format bytes the pipeline converts for `handle`'s inputs or (after chooseDirect)
  // outputs, or UINT64_MAX when the work must not run inline (a completion with a callback).
  uint64_t inlineCost(const HandleImpl& handle, bool inputs) const;
  void preprocess(HandleImpl& handle);
  void upload(HandleImpl& handle, Clock::time_point preprocessed);
  void postprocess(HandleImpl& handle);
  // The bytes a QBuffer names: heap memory, or `dma` (the DMA buffer resolved for it).
  std::span<const std::byte> userBytes(const QBuffer& buffer, const DmaBufferImpl* dma,
                                       const std::string& name) const;
  void attachStaging(HandleImpl& handle, uint32_t dbcId);

  // Completion side (CompletionEngine thread).
  void onWake();
  Clock::time_point nextDeadline() const;
  uint16_t nextReqIdLocked();
  void failAllLocked(QStatus status, const std::string& why, std::vector<Task>& out);

  SetImpl& set_;
  ContextImpl& context_;
  const uint32_t index_;
  const QID device_;
  std::shared_ptr<const driver::DeviceNode> node_;
  const ProgramLayout& layout_;
  const QueueConfig config_;
  std::vector<HandleImpl*> handles_;

  // Guards the activation, the window (ring writes and response reads) and in-flight requests.
  mutable std::mutex ringMutex_;
  std::condition_variable ringChanged_;
  std::optional<driver::CompletionEvent> event_;
  std::shared_ptr<driver::DbcWindow> window_;  // shared with a leading waiter while it sleeps
  uint32_t dbcId_ = 0;
  bool active_ = false;
  std::map<uint16_t, Request> inFlight_;
  uint16_t nextReqId_ = 0;
  uint32_t nextSequence_ = 1;
  std::unique_ptr<CompletionEngine> engine_;
  InterruptLeader leader_{[this] { onWake(); }};

  std::mutex taskMutex_;
  std::condition_variable taskReady_;
  std::deque<Task> tasks_;
  std::deque<Task> parked_;  // submissions waiting for their group to switch over
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::size_t inlineSubmissions_ = 0;  // runSubmission calls on submitting threads
  std::condition_variable inlineDone_;
};

}  // namespace qaic::rt::engine
