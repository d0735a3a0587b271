// SPDX-License-Identifier: Apache-2.0
// One activation of a loaded program and its DBC ring (docs/device-protocol.md sections 3 and 4):
// ACTIVATE and DEACTIVATE through driver::, the mapped window, the eventfd interrupt and the
// CompletionEngine thread that waits on it, the requests in flight with their deadlines, and
// their retries. Whatever ends a request (its response, its last timeout, a device that went
// away, a deactivation) is handed to the owner in one batch per drain, never under the ring's
// lock. Knows nothing of buffers or formats: a request is its elements and the handle it is for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <qaic/Errors.hpp>

#include "driver/BufferObject.hpp"
#include "driver/CompletionEvent.hpp"
#include "driver/DbcWindow.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/WindowFutex.hpp"
#include "runtime/datapath/CompletionEngine.hpp"
#include "runtime/datapath/InterruptLeader.hpp"

namespace qaic::rt {

class ContextImpl;
class InferenceHandleImpl;

struct RingConfig {
  std::chrono::milliseconds timeout{5000};  // per try of a request on the device
  uint32_t retries = 5;
  uint32_t queueSize = driver::kDefaultQueueSize;  // ring elements
  // Synchronous waiters may take the interrupt (InterruptLeader). Off for group members, whose
  // activation may switch under a waiter.
  bool leadable = true;
  // A part of a multi-device program: ACTIVATE joins this peer group (driver::activatePeerPart).
  std::optional<driver::PeerGroupPart> peer;
};

// Slices of one buffer object attached to the DBC on every activation (a BO is sliced to one
// DBC; a new activation re-slices it).
struct SliceAttachment {
  const driver::BufferObject* bo = nullptr;
  uint32_t dir = 0;  // QAIC_DIR_TO_DEVICE or QAIC_DIR_FROM_DEVICE
  std::vector<qaic_attach_slice_entry> slices;
  std::string what;  // for messages: "the staging of handle 3"
};

// How a request left the ring.
struct EndedRequest {
  InferenceHandleImpl* handle = nullptr;
  QStatus status = QS_SUCCESS;  // QS_SUCCESS: the device answered, with `code`
  uint16_t code = 0;            // the answer's DBC completion code
  std::string message;
  std::chrono::steady_clock::time_point submittedAt{};  // its doorbell
  std::chrono::steady_clock::time_point completedAt{};  // its answer was taken
};

// What a ring reports to its owner (the Pipeline).
class RingOwner {
 public:
  virtual ~RingOwner() = default;
  // Requests the ring is done with. Called on the thread that drained (the completion thread, a
  // leading waiter) or that deactivated or stopped the ring, without the ring's lock.
  virtual void requestsEnded(std::vector<EndedRequest>& ended) = 0;
};

class RequestRing {
 public:
  using Clock = std::chrono::steady_clock;

  // `what` names the activation in messages ("activation 0 of 'resnet'"). Throws Error(QS_ERROR)
  // when the interrupt or its completion thread cannot be set up.
  RequestRing(RingOwner& owner, const ContextImpl& context, std::shared_ptr<const driver::DeviceNode> node,
              std::string what, RingConfig config);
  ~RequestRing();  // stop() and deactivate()
  RequestRing(const RequestRing&) = delete;
  RequestRing& operator=(const RequestRing&) = delete;

  // ACTIVATE program `programIndex` of load `loadId`, map the DBC window and attach
  // `attachments`; nothing is left active when it throws Error (QS_NO_RESOURCES naming the free
  // NSPs, QS_INCOMPATIBLE, QS_DEV_REMOVED, QS_ERROR). No-op while active. `resourceGroup`: the
  // reserved group it draws from, or 0 (driver::activate).
  void activate(uint32_t loadId, uint32_t programIndex, uint32_t numCores, std::span<const SliceAttachment> attachments,
                uint32_t resourceGroup = 0);
  // DEACTIVATE; requests in flight end with QS_CANCELED.
  void deactivate();
  // Stops the completion thread; requests in flight end with QS_CANCELED. Idempotent.
  void stop();

  // Where requests go now (zero copy slices user BOs to it): the DBC and the activation's
  // generation, or nothing while inactive.
  struct Target {
    uint32_t dbcId = 0;
    uint32_t generation = 0;
  };
  std::optional<Target> target() const;

  // Puts one request on the ring under a fresh req_id, waiting for room at most one timeout.
  // Throws Error: QS_CANCELED (not active), QS_INCOMPATIBLE (more elements than the ring holds),
  // QS_TIMEDOUT (the ring stayed full), QS_DEV_REMOVED (the device is gone) or QS_ERROR (the
  // window refused).
  void submit(InferenceHandleImpl& handle, std::vector<driver::RequestElement> elements);

  // Takes every response, checks the device status, that the device is still there, and the
  // deadlines (retrying what timed out), then reports what ended. The completion thread's work;
  // a leading waiter does it too.
  void drain();
  // drain() unless another thread holds the ring (it drains or submits): false then.
  bool tryDrain();

  // The completion thread's spin on the polling data path: while requests are in flight and no
  // synchronous waiter leads, spins up to the device's poll interval for a response; true when
  // one is there to drain. Between spins the thread sleeps one poll interval (nextDeadline).
  bool spinForResponses();

  // A synchronous waiter's way to the interrupt: the window while a waiter may lead (active and
  // leadable), else null.
  std::shared_ptr<driver::DbcWindow> leadableWindow() const;
  InterruptLeader& interruptLeader() { return leader_; }

  // How often a drain looks whether the device is still there (nextDeadline() wakes the
  // completion thread for it; a leading waiter sleeps no longer).
  static constexpr std::chrono::milliseconds kPresenceCheckPeriod{100};

 private:
  struct Request {
    InferenceHandleImpl* handle = nullptr;
    std::vector<driver::RequestElement> elements;
    Clock::time_point submittedAt{};
    Clock::time_point deadline{};
    uint32_t retriesLeft = 0;
  };

  uint16_t nextReqIdLocked();
  Clock::time_point nextDeadline() const;
  std::chrono::nanoseconds pollPeriod() const;
  void endAllLocked(QStatus status, const std::string& why, std::vector<EndedRequest>& out);
  void retryOrExpireLocked(Clock::time_point now, std::vector<EndedRequest>& out);
  // A lost device (DeviceNode::checkPresent, at most every kPresenceCheckPeriod): every request
  // ends with QS_DEV_REMOVED and so does every later submission.
  void checkDevicePresentLocked(Clock::time_point now, std::vector<EndedRequest>& out);
  void report(std::vector<EndedRequest>& ended);
  // drain()'s work; releases `lock` before it reports.
  void drainLocked(std::unique_lock<std::mutex>& lock);
  // The polling data path: the ring counts as a spinning host (kRegHostPolling) while it has
  // requests in flight (from before the doorbell of the first), so the device raises no
  // interrupt for them; the completion thread and a leading waiter poll instead (mainline takes
  // no MSI in this mode either).
  void updateHostPollingLocked(bool submitting = false);

  RingOwner& owner_;
  const ContextImpl& context_;
  std::shared_ptr<const driver::DeviceNode> node_;
  const std::string what_;
  const RingConfig config_;

  // Guards the activation, the window (ring writes and response reads) and the requests.
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // room on the ring, or the activation ended
  std::optional<driver::CompletionEvent> event_;
  std::shared_ptr<driver::DbcWindow> window_;  // shared with a leading waiter while it sleeps
  uint32_t dbcId_ = 0;
  bool active_ = false;
  std::map<uint16_t, Request> inFlight_;
  uint16_t nextReqId_ = 0;
  Clock::time_point nextPresenceCheck_{};
  std::string deviceGone_;               // why the device is gone, once it is
  bool hostPolling_ = false;             // announced in the window (updateHostPollingLocked)
  driver::AdaptiveSpin completionSpin_;  // the completion thread's (spinForResponses)
  InterruptLeader leader_;
  std::unique_ptr<CompletionEngine> engine_;  // last: its thread stops before the rest goes
};

}  // namespace qaic::rt
