// SPDX-License-Identifier: Apache-2.0
#include "DeviceWorker.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include "Log.hpp"

namespace qaic::qaicd {

Result<std::shared_ptr<LoopMailbox>> LoopMailbox::create() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) return lastError("eventfd");
  return std::shared_ptr<LoopMailbox>(new LoopMailbox(std::move(fd)));
}

void LoopMailbox::post(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    posted_.push_back(std::move(work));
  }
  const uint64_t one = 1;
  // Only fails when the counter would overflow, and then the loop is woken already.
  [[maybe_unused]] ssize_t n = ::write(eventfd_.get(), &one, sizeof one);
}

std::vector<std::function<void()>> LoopMailbox::take() {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = ::read(eventfd_.get(), &count, sizeof count);
  std::lock_guard lock(mutex_);
  return std::exchange(posted_, {});
}

DeviceWorker::DeviceWorker(driver::DeviceRoot root, unsigned index)
    : index_(index), state_(std::make_shared<State>()), thread_(serve, state_, std::move(root), index) {}

DeviceWorker::~DeviceWorker() {
  requestStop();
  std::unique_lock lock(state_->mutex);
  if (state_->done.wait_for(lock, kStopWait, [&] { return state_->finished; })) {
    lock.unlock();
    thread_.join();
    return;
  }
  lock.unlock();
  logWarn("device " + std::to_string(index_) + ": a device call has not returned after " +
          std::to_string(kStopWait.count()) + " ms; not waiting for it");
  thread_.detach();
}

void DeviceWorker::post(Clock::time_point deadline, Call call) {
  {
    std::lock_guard lock(state_->mutex);
    state_->calls.emplace_back(deadline, std::move(call));
  }
  state_->wake.notify_one();
}

void DeviceWorker::requestStop() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_one();
}

bool DeviceWorker::finished() const {
  std::lock_guard lock(state_->mutex);
  return state_->finished;
}

std::optional<DeviceWorker::Clock::duration> DeviceWorker::busyFor() const {
  const int64_t since = state_->busySinceNs.load();
  if (since == 0) return std::nullopt;
  return Clock::now().time_since_epoch() - std::chrono::nanoseconds(since);
}

bool DeviceWorker::idle() const {
  std::lock_guard lock(state_->mutex);
  return state_->calls.empty() && state_->busySinceNs.load() == 0;
}

void DeviceWorker::serve(std::shared_ptr<State> state, driver::DeviceRoot root, unsigned index) {
  auto node = driver::DeviceNode::open(root, index);
  const std::string notOpen = node ? std::string() : "device " + std::to_string(index) + ": " + node.message();
  std::unique_lock lock(state->mutex);
  for (;;) {
    state->wake.wait(lock, [&] { return state->stop || !state->calls.empty(); });
    if (state->calls.empty()) break;  // stopping with nothing left
    auto [deadline, call] = std::move(state->calls.front());
    state->calls.pop_front();
    const auto now = Clock::now();
    state->busySinceNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    const bool stopping = state->stop;
    lock.unlock();
    if (!node)
      call(nullptr, notOpen);
    else if (stopping)
      call(nullptr, "device " + std::to_string(index) + " went away");
    else if (now > deadline)
      call(nullptr, "device " + std::to_string(index) + ": not answering (the call waited past its deadline)");
    else
      call(&*node, {});
    call = nullptr;  // its captures go on this thread, before the next call
    lock.lock();
    state->busySinceNs = 0;
  }
  state->finished = true;
  lock.unlock();
  state->done.notify_all();
}

}  // namespace qaic::qaicd
