// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/RequestRing.hpp"

#include <algorithm>
#include <array>

#include "driver/ManageCalls.hpp"
#include "runtime/objects/ContextImpl.hpp"
#include "runtime/objects/InferenceHandleImpl.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {

RequestRing::RequestRing(RingOwner& owner, const ContextImpl& context, std::shared_ptr<const driver::DeviceNode> node,
                         std::string what, RingConfig config)
    : owner_(owner), context_(context), node_(std::move(node)), what_(std::move(what)), config_(config) {
  auto event = driver::CompletionEvent::create();
  if (!event) throw Error(QS_ERROR, what_ + ": " + event.message());
  event_.emplace(std::move(event.value()));
  engine_ = std::make_unique<CompletionEngine>(
      event_->fd(), [this] { drain(); }, [this] { return nextDeadline(); }, [this] { return spinForResponses(); },
      [this] { return pollPeriod(); });
}

RequestRing::~RequestRing() {
  stop();
  deactivate();
}

void RequestRing::stop() {
  if (engine_) engine_->stop();
  std::vector<EndedRequest> ended;
  {
    std::lock_guard lock(mutex_);
    endAllLocked(QS_CANCELED, "the inference set is shutting down", ended);
  }
  report(ended);
}

void RequestRing::activate(uint32_t loadId, uint32_t programIndex, uint32_t numCores,
                           std::span<const SliceAttachment> attachments, uint32_t resourceGroup) {
  std::lock_guard lock(mutex_);
  if (active_) return;
  auto dbc = config_.peer
                 ? driver::activatePeerPart(*node_, loadId, programIndex, config_.queueSize, event_->fd(),
                                            *config_.peer, resourceGroup)
                 : driver::activate(*node_, loadId, programIndex, config_.queueSize, event_->fd(), resourceGroup);
  if (!dbc) {
    std::string detail = dbc.message();
    if (dbc.error() == ENOSPC) {
      auto status = driver::queryDeviceStatus(*node_);
      detail += "; the program needs " + std::to_string(numCores) + " NSP(s) per activation" +
                (status ? ", the device has " + std::to_string(status->nspFree) + " free" : std::string());
    }
    throw Error(statusForErrno(dbc.error()), what_ + " on device " + std::to_string(node_->index()) + ": " + detail);
  }
  const uint32_t dbcId = *dbc;
  auto undo = [&] { (void)driver::deactivate(*node_, dbcId); };
  auto window = driver::DbcWindow::map(*node_, dbcId);
  if (!window) {
    undo();
    throw Error(QS_ERROR, "mapping DBC " + std::to_string(dbcId) + ": " + window.message());
  }
  for (const SliceAttachment& attachment : attachments) {
    (void)node_->detachSlice(attachment.bo->handle());  // sliced to the previous activation's DBC
    qaic_attach_slice_hdr header{};
    header.dbc_id = dbcId;
    header.handle = attachment.bo->handle();
    header.dir = attachment.dir;
    for (const auto& slice : attachment.slices) header.size += slice.size;
    if (auto attached = node_->attachSlices(header, attachment.slices); !attached) {
      undo();
      throw Error(QS_ERROR,
                  "attaching " + attachment.what + " to DBC " + std::to_string(dbcId) + ": " + attached.message());
    }
  }
  window_ = std::make_shared<driver::DbcWindow>(std::move(window.value()));
  dbcId_ = dbcId;
  active_ = true;
  context_.log(QL_DEBUG, what_ + " on DBC " + std::to_string(dbcId));
}

void RequestRing::deactivate() {
  std::vector<EndedRequest> ended;
  {
    std::lock_guard lock(mutex_);
    if (!active_) return;
    // A device that reset, stopped or went away has already released this activation (its window
    // says so): its DBC id may be another activation's by now, even one of this process, so
    // DEACTIVATE would end someone else's work.
    const bool released = window_ && window_->deviceStatus() != driver::DeviceStatus::Ok;
    endAllLocked(QS_CANCELED, "the activation was deactivated", ended);  // withdraws the polling
    window_.reset();
    active_ = false;
    if (released) {
      context_.log(QL_DEBUG, "DBC " + std::to_string(dbcId_) + " was released by the device; not deactivating it");
    } else if (auto done = driver::deactivate(*node_, dbcId_); !done) {
      context_.log(QL_WARN, "deactivating DBC " + std::to_string(dbcId_) + ": " + done.message());
    }
  }
  report(ended);
}

std::optional<RequestRing::Target> RequestRing::target() const {
  std::lock_guard lock(mutex_);
  if (!active_ || !window_) return std::nullopt;
  return Target{dbcId_, window_->generation()};
}

std::shared_ptr<driver::DbcWindow> RequestRing::leadableWindow() const {
  if (!config_.leadable) return nullptr;
  std::lock_guard lock(mutex_);
  return active_ ? window_ : nullptr;
}

bool RequestRing::spinForResponses() {
  std::shared_ptr<driver::DbcWindow> window;
  {
    std::lock_guard lock(mutex_);
    if (!active_ || !window_ || inFlight_.empty() || !window_->devicePolls()) return false;
    window = window_;
  }
  if (leader_.leading() || leader_.spinners() > 0) return false;  // they drain for everyone
  const auto spinFor = completionSpin_.spinFor(kHostSpin);
  if (spinFor <= std::chrono::nanoseconds::zero()) return false;
  window->announceHostPolling(true);
  bool found = window->spinForResponse(window->responseFutexValue(), spinFor);
  completionSpin_.result(found);
  window->announceHostPolling(false);
  // A response the device pushed while it still saw the announcement raised no eventfd.
  return found || window->responsesPending();
}

uint16_t RequestRing::nextReqIdLocked() {
  do {
    ++nextReqId_;
  } while (inFlight_.count(nextReqId_));
  return nextReqId_;
}

void RequestRing::submit(InferenceHandleImpl& handle, std::vector<driver::RequestElement> elements) {
  std::unique_lock lock(mutex_);
  if (!deviceGone_.empty()) throw Error(QS_DEV_REMOVED, deviceGone_);
  if (!active_ || !window_) throw Error(QS_CANCELED, what_ + " is not active");
  if (elements.size() >= window_->queueSize())
    throw Error(QS_INCOMPATIBLE, "a request of " + std::to_string(elements.size()) +
                                     " elements does not fit a ring of " + std::to_string(window_->queueSize()));
  // The ring is sized for every handle's request at once, so waiting for room is rare; it is
  // bounded by the data-path timeout.
  const auto giveUp = Clock::now() + config_.timeout;
  while (window_->requestSlotsFree() < elements.size()) {
    if (changed_.wait_until(lock, std::min(giveUp, Clock::now() + std::chrono::milliseconds(1))) ==
            std::cv_status::timeout &&
        Clock::now() >= giveUp)
      throw Error(QS_TIMEDOUT, "the request ring of DBC " + std::to_string(dbcId_) + " stayed full for " +
                                   std::to_string(config_.timeout.count()) + " ms");
    if (!deviceGone_.empty()) throw Error(QS_DEV_REMOVED, deviceGone_);
    if (!active_ || !window_) throw Error(QS_CANCELED, "the activation was deactivated");
  }
  const uint16_t reqId = nextReqIdLocked();
  for (auto& element : elements) element.reqId = reqId;
  Request request{&handle, std::move(elements), Clock::now(), {}, config_.retries};
  request.deadline = request.submittedAt + config_.timeout;
  // Announced before the doorbell: the device may answer before submit() returns.
  updateHostPollingLocked(true);
  auto wake = window_->enqueue(request.elements);
  if (!wake) {
    updateHostPollingLocked();
    throw Error(wake.error() == ENODEV ? QS_DEV_REMOVED : QS_ERROR, "device " + std::to_string(node_->index()) +
                                                                        ": submitting to DBC " +
                                                                        std::to_string(dbcId_) + ": " + wake.message());
  }
  inFlight_.emplace(reqId, std::move(request));
  if (!*wake) return;
  // The wake-up's system call without the lock, which the other submitters and the drains wait
  // for; the window stays mapped meanwhile.
  const std::shared_ptr<driver::DbcWindow> window = window_;
  lock.unlock();
  window->ringDoorbell();
}

void RequestRing::updateHostPollingLocked(bool submitting) {
  leader_.setRequestsInFlight(inFlight_.size() + (submitting ? 1 : 0));
  const bool poll = window_ && (submitting || !inFlight_.empty()) && window_->devicePolls();
  if (poll == hostPolling_) return;
  window_->announceHostPolling(poll);
  hostPolling_ = poll;
}

RequestRing::Clock::time_point RequestRing::nextDeadline() const {
  std::lock_guard lock(mutex_);
  auto next = Clock::time_point::max();
  for (const auto& [id, request] : inFlight_) next = std::min(next, request.deadline);
  // Wake up to see that the device is still there: a request submitted while the completion
  // thread sleeps does not shorten its sleep, and nothing else would end it on a dead device.
  if (deviceGone_.empty()) next = std::min(next, nextPresenceCheck_);
  return next;
}

std::chrono::nanoseconds RequestRing::pollPeriod() const {
  // Polling: the device signals nothing while requests are in flight, so the completion thread
  // looks again every poll interval (mainline's poll work does the same). At least 1 us: an
  // interval of 0 would make it spin.
  std::lock_guard lock(mutex_);
  if (!hostPolling_) return {};
  return std::max<std::chrono::nanoseconds>(window_->pollInterval(), std::chrono::microseconds(1));
}

void RequestRing::endAllLocked(QStatus status, const std::string& why, std::vector<EndedRequest>& out) {
  for (auto& [id, request] : inFlight_)
    out.push_back({request.handle, status, 0, why, request.submittedAt, Clock::now()});
  inFlight_.clear();
  updateHostPollingLocked();
  changed_.notify_all();
}

void RequestRing::retryOrExpireLocked(Clock::time_point now, std::vector<EndedRequest>& out) {
  for (auto it = inFlight_.begin(); it != inFlight_.end();) {
    Request& request = it->second;
    if (request.deadline > now) {
      ++it;
      continue;
    }
    if (request.retriesLeft == 0) {
      out.push_back({request.handle, QS_TIMEDOUT, 0,
                     "no completion within " + std::to_string(config_.timeout.count()) + " ms after " +
                         std::to_string(config_.retries) + " retries",
                     request.submittedAt, now});
      it = inFlight_.erase(it);
      continue;
    }
    // Resubmit under a new req_id so a late answer to the old one is ignored.
    const uint16_t reqId = nextReqIdLocked();
    for (auto& element : request.elements) element.reqId = reqId;
    --request.retriesLeft;
    request.deadline = now + config_.timeout;
    context_.log(QL_WARN, what_ + ": " + request.handle->requestLabel() + " timed out after " +
                              std::to_string(config_.timeout.count()) + " ms, retrying (" +
                              std::to_string(request.retriesLeft) + " left)");
    if (window_->requestSlotsFree() >= request.elements.size() && window_->submit(request.elements)) {
      inFlight_.emplace(reqId, std::move(request));
      it = inFlight_.erase(it);
      continue;
    }
    ++it;  // no room to retry now: keep the old entry and try again at its next deadline
  }
}

void RequestRing::drain() {
  std::unique_lock lock(mutex_);
  drainLocked(lock);
}

bool RequestRing::tryDrain() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock) return false;
  drainLocked(lock);
  return true;
}

void RequestRing::drainLocked(std::unique_lock<std::mutex>& lock) {
  std::vector<EndedRequest> ended;
  {
    if (!active_ || !window_) return;
    std::array<driver::ResponseElement, 64> batch;
    for (;;) {
      auto taken = window_->takeResponses(batch);
      if (!taken) {
        endAllLocked(QS_DEV_REMOVED, "reading responses of DBC " + std::to_string(dbcId_) + ": " + taken.message(),
                     ended);
        break;
      }
      const auto now = Clock::now();
      for (std::size_t i = 0; i < *taken; ++i) {
        auto it = inFlight_.find(batch[i].reqId);
        if (it == inFlight_.end()) continue;  // a request already retried or failed
        ended.push_back({it->second.handle, QS_SUCCESS, batch[i].completionCode, {}, it->second.submittedAt, now});
        inFlight_.erase(it);
      }
      // Stop only on an empty read: the device signals only when the FIFO goes from empty to
      // non-empty, so a response that lands while this batch is taken raises no new interrupt.
      if (*taken == 0) break;
    }
    const auto status = window_->deviceStatus();
    const std::string device = "device " + std::to_string(node_->index());
    if (status == driver::DeviceStatus::Removed || status == driver::DeviceStatus::Stopped)
      endAllLocked(QS_DEV_REMOVED, device + " was removed", ended);
    else if (status == driver::DeviceStatus::Resetting)
      endAllLocked(QS_DEV_RESET, device + " reset while the request was in flight", ended);
    checkDevicePresentLocked(Clock::now(), ended);
    retryOrExpireLocked(Clock::now(), ended);
    updateHostPollingLocked();
    changed_.notify_all();
  }
  lock.unlock();
  report(ended);
}

void RequestRing::checkDevicePresentLocked(Clock::time_point now, std::vector<EndedRequest>& out) {
  // The window of a killed emulator stays mapped and silent: its status register never changes.
  if (deviceGone_.empty()) {
    if (now < nextPresenceCheck_) return;
    nextPresenceCheck_ = now + kPresenceCheckPeriod;
    auto present = node_->checkPresent();
    if (present || present.error() != ENODEV) return;
    deviceGone_ = what_ + ": " + present.message();
    context_.log(QL_ERROR, deviceGone_);
  }
  endAllLocked(QS_DEV_REMOVED, deviceGone_, out);
}

void RequestRing::report(std::vector<EndedRequest>& ended) {
  if (!ended.empty()) owner_.requestsEnded(ended);
}

}  // namespace qaic::rt
