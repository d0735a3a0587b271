// SPDX-License-Identifier: Apache-2.0
// A device's calls off the event loop (docs/qaicd.md, "Device calls"). A call on a device node
// (MANAGE for partitions, the STATUS query, opening it) waits in the kernel for as long as the
// device takes: a firmware that does not answer holds MANAGE up to the driver's
// control_resp_timeout_s. So each device gets one thread that owns its open node and runs the
// calls posted to it one at a time, in order; the event loop only posts and is told through a
// LoopMailbox. A call whose deadline passes while it waits behind a hung one is not run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/DeviceRoot.hpp"

namespace qaic::qaicd {

// Work handed back to the event loop by other threads: continuations queued in the order they
// were posted and an eventfd, readable while any wait, for the loop to watch.
class LoopMailbox {
 public:
  static Result<std::shared_ptr<LoopMailbox>> create();
  int fd() const { return eventfd_.get(); }
  void post(std::function<void()> work);      // any thread
  std::vector<std::function<void()>> take();  // the loop: everything posted so far

 private:
  explicit LoopMailbox(UniqueFd eventfd) : eventfd_(std::move(eventfd)) {}
  UniqueFd eventfd_;
  std::mutex mutex_;
  std::vector<std::function<void()>> posted_;
};

class DeviceWorker {
 public:
  using Clock = std::chrono::steady_clock;
  // Runs on the worker thread with the open node, or with nullptr and the reason when it does
  // not run on one: the node could not be opened, the worker is stopping, or the deadline
  // passed while the call waited.
  using Call = std::function<void(const driver::DeviceNode* node, const std::string& whyNot)>;

  // Starts the thread, which opens node `index` of `root` before running any call.
  DeviceWorker(driver::DeviceRoot root, unsigned index);
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;
  // Stops the thread: calls still queued run with nullptr. A thread held in the kernel by a
  // call that has not returned after kStopWait is left to finish on its own (it owns nothing
  // but its shared state) and logged, so that a hung device never holds up qaicd's exit.
  ~DeviceWorker();

  void post(Clock::time_point deadline, Call call);
  // Asks the thread to end after its current call, without waiting.
  void requestStop();
  bool finished() const;
  // How long the current call has been running; nullopt when the thread is idle.
  std::optional<Clock::duration> busyFor() const;
  bool idle() const;  // nothing running, nothing queued

  static constexpr std::chrono::milliseconds kStopWait{2000};

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake, done;
    std::deque<std::pair<Clock::time_point, Call>> calls;
    bool stop = false;
    bool finished = false;
    std::atomic<int64_t> busySinceNs{0};  // Clock time the current call started; 0: idle
  };
  static void serve(std::shared_ptr<State> state, driver::DeviceRoot root, unsigned index);

  unsigned index_;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace qaic::qaicd
