// SPDX-License-Identifier: Apache-2.0
// libqaic/runtime/datapath: what moves an inference through the device once its set is built:
// the Pipeline of each activation (this header), the threads it runs on (WorkerPool), the bytes
// of a request (RequestBuilder), the activation's DBC ring with the requests in flight, their
// deadlines and retries (RequestRing), the io_uring thread that waits on its interrupt
// (CompletionEngine) and the synchronous waiter that takes that thread's place
// (InterruptLeader). Depends on driver/ (activations, the DBC window, futexes), kernels/format
// (conversions), loading/ProgramLayout (where each buffer goes) and, in objects/, on the handle
// state it fills (InferenceHandleImpl), the context (log, DMA buffers) and StatusCodes. Only
// objects/ depends on it: a set owns its pipelines, a context its WorkerPool. Calls go down;
// answers come back up through owner interfaces (RingOwner, PipelineOwner).
//
// The pipeline of one activation (seed 002): up to numThreadsPerQueue jobs at once on the
// context's WorkerPool that preprocess a submission (user buffers -> device format, in the
// handle's staging BO or, zero copy, the user's own DMA buffer), build its request and put it on
// the RequestRing, and that download and postprocess what the ring reports ended. The pipeline
// owns no thread: its tasks wait in its own queue, and a job of the pool takes one task at a time
// (then queues itself again behind the other pipelines' jobs), so activations share the host's
// cores fairly and a set's thread count does not grow with its activations. Owns the ring and
// the staging BOs; reports every handle's end to its owner, the InferenceSet. Small requests
// skip the pool: the submitting thread preprocesses and uploads, the completion thread
// postprocesses (a hand-off to another thread costs more than the work), unless an earlier
// submission is still queued: a request never overtakes one submitted before it on the same
// thread, so one task at a time (-T 1) keeps the submission order on the device.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/datapath/RequestRing.hpp"
#include "runtime/datapath/WorkerPool.hpp"
#include "runtime/loading/ProgramLayout.hpp"
#include "runtime/objects/InferenceHandleImpl.hpp"

namespace qaic::rt {

class ContextImpl;

// What a pipeline needs from its inference set (implemented by InferenceSetImpl).
class PipelineOwner {
 public:
  virtual ~PipelineOwner() = default;
  // Over-subscription admission: true when the request may go to the device now, false when
  // it must wait (the pipeline parks it until wakeParked()). Throws Error when it waited too long
  // or the group was disabled. Every admitted request ends with one release().
  virtual bool admit(AdmitTicket& ticket) = 0;
  virtual void forget(AdmitTicket& ticket) = 0;  // a parked request that will not be retried
  virtual void release() = 0;
  // The inference of `handle` ended: publish its outcome and tell whoever waits.
  virtual void finished(InferenceHandleImpl& handle, QStatus status, const std::string& message) = 0;
};

struct PipelineConfig {
  uint32_t threads = 4;  // the pipeline's tasks that may run at once (numThreadsPerQueue)
  // DMA buffers in the device's own format are transferred in place. Off for group members,
  // whose DBC changes with every switch (a BO stays sliced to one DBC).
  bool zeroCopy = true;
  // Small requests run on the submitting and completion threads. Off for group members, whose
  // admission may park a submission or switch activations.
  bool inlineSmallRequests = true;
  RingConfig ring;
};

// Conversion bytes up to which a request's preprocessing or postprocessing runs inline.
inline constexpr uint64_t kInlineConversionBytes = 64 * 1024;

class Pipeline final : private RingOwner {
 public:
  // `setName` names the set in messages. Throws Error when the ring cannot be set up.
  Pipeline(PipelineOwner& owner, ContextImpl& context, const std::string& setName, uint32_t index, QID device,
           std::shared_ptr<const driver::DeviceNode> node, const ProgramLayout& layout, PipelineConfig config);
  ~Pipeline() override;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  uint32_t index() const { return index_; }
  QID device() const { return device_; }
  RequestRing& ring() { return ring_; }

  // Creates the staging BOs of `handle`; they are attached to the DBC on every activate().
  void addHandle(InferenceHandleImpl& handle);
  // Activates load `loadId` with every handle's staging attached (RequestRing::activate),
  // drawing from `resourceGroup` (ResourceReservation) or, 0, the open file's default.
  void activate(uint32_t loadId, uint32_t resourceGroup = 0);
  // In-flight requests end with QS_CANCELED.
  void deactivate();

  // Runs a submitted handle's inference (on this thread when it is small).
  void submit(InferenceHandleImpl& handle);
  // Retries submissions parked while waiting for their over-subscription group.
  void wakeParked();
  // Stops the pipeline's jobs (waiting for those running) and the ring; queued, parked and
  // in-flight requests fail with QS_CANCELED.
  void shutdown();

 private:
  struct Task {
    InferenceHandleImpl* handle = nullptr;
    bool isCompletion = false;
    bool admitted = false;    // passed PipelineOwner::admit, so it owes one release()
    bool holdsOrder = false;  // counted in submissionsAhead_ until it reaches the ring (or ends)
    AdmitTicket ticket;
    EndedRequest end;  // a completion: how it left the ring (or why it never reached it)

    static Task submission(InferenceHandleImpl& handle);
    // A request that was admitted and ended: on the ring, or before reaching it.
    static Task completion(EndedRequest end);
  };

  void requestsEnded(std::vector<EndedRequest>& ended) override;

  // One pool job: runs the next task, then queues itself again while tasks wait.
  void serveOne();
  // Posts jobs for the queued tasks, up to config_.threads at once. taskMutex_ held.
  void scheduleLocked();
  // A pool job is done with this pipeline. taskMutex_ held.
  void jobEndedLocked();
  // Parked submissions re-check their admission (its deadline) at least every kIdleWake.
  void armParkTimerLocked();
  void push(Task task);
  void conclude(Task& task);  // finish without running the task
  void park(Task task);
  // onCaller: running on the application's thread inside submit() (failures are deferred).
  void runSubmission(Task& task, bool onCaller);
  void fail(InferenceHandleImpl& handle, QStatus status, std::string message, bool onCaller);
  // onCompletionThread: a success finished inline (a failure found then is deferred).
  void runCompletion(EndedRequest& end, bool onCompletionThread);

  // Device-format bytes the pipeline converts for `handle`'s inputs or (after chooseDirect)
  // outputs, or UINT64_MAX when the work must not run inline (a completion with a callback).
  uint64_t inlineCost(const InferenceHandleImpl& handle, bool inputs) const;
  void chooseDirect(InferenceHandleImpl& handle);
  void preprocess(InferenceHandleImpl& handle);
  // cpuStart: stageCpuClock(preciseCpu) after preprocess.
  void upload(InferenceHandleImpl& handle, Clock::duration cpuStart, bool preciseCpu);
  // The device's words on why the program failed (empty when it gave none).
  std::string responseDiagnostic(const InferenceHandleImpl& handle) const;
  void postprocess(InferenceHandleImpl& handle, Clock::time_point completedAt, bool preciseCpu);
  // The bytes a QBuffer names: heap memory, or `dma` (the DMA buffer resolved for it).
  std::span<const std::byte> userBytesOf(const QBuffer& buffer, const DmaBufferImpl* dma,
                                         const std::string& name) const;
  std::vector<SliceAttachment> stagingAttachments() const;

  PipelineOwner& owner_;
  ContextImpl& context_;
  WorkerPool& pool_;
  const std::string setName_;
  const uint32_t index_;
  const QID device_;
  std::shared_ptr<const driver::DeviceNode> node_;
  const ProgramLayout& layout_;
  const PipelineConfig config_;
  std::vector<InferenceHandleImpl*> handles_;
  std::atomic<uint32_t> nextSequence_{1};

  std::mutex taskMutex_;
  std::deque<Task> tasks_;
  std::deque<Task> parked_;  // submissions waiting for their group to switch over
  bool stopping_ = false;
  std::size_t jobs_ = 0;            // pool jobs of this pipeline, queued or running
  std::size_t servers_ = 0;         // of those, serveOne jobs (at most config_.threads)
  std::size_t waitingServers_ = 0;  // serveOne jobs queued, not yet running
  bool parkTimer_ = false;          // a re-check of parked_ is queued
  std::condition_variable jobsDone_;
  std::size_t inlineSubmissions_ = 0;  // runSubmission calls on submitting threads
  // Queued submissions not yet on the ring: a small request may not run inline past them.
  std::size_t submissionsAhead_ = 0;
  std::condition_variable inlineDone_;
  RequestRing ring_;  // last: destroyed first, after shutdown() has stopped it
};

}  // namespace qaic::rt
