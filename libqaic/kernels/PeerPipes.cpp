// SPDX-License-Identifier: Apache-2.0
// One producer and one consumer per link (a part runs one program run at a time, and a channel
// has one sender and one receiver), so a send checks for room, copies outside the lock and then
// queues, and a receive takes the oldest message, copies it outside the lock and gives the
// buffer back; the lock covers only the queue and the counters.
#include "kernels/PeerPipes.hpp"

#include <cstring>

#include "kernels/HostProgram.hpp"

namespace qaic::kernels {

class PeerPipes::PartExchange final : public PeerExchange {
 public:
  PartExchange(std::shared_ptr<PeerPipes> pipes, std::size_t part, std::shared_ptr<PeerExchange> collectives)
      : pipes_(std::move(pipes)), part_(part), collectives_(std::move(collectives)) {}
  std::size_t parts() const override { return pipes_->parts_; }
  std::size_t part() const override { return part_; }
  void allReduceSum(int collective, ir::DType type, std::span<std::byte> inOut) override {
    collectivesFor(collective).allReduceSum(collective, type, inOut);
  }
  void allGather(int collective, std::span<const std::byte> mine, std::span<std::byte> all) override {
    collectivesFor(collective).allGather(collective, mine, all);
  }
  void send(int channel, std::size_t to, std::span<const std::byte> bytes) override {
    pipes_->send(part_, channel, to, bytes);
  }
  void receive(int channel, std::size_t from, std::span<std::byte> into) override {
    pipes_->receive(part_, channel, from, into);
  }

 private:
  PeerExchange& collectivesFor(int collective) const {
    if (!collectives_) {
      throw ExecutionError("part " + std::to_string(part_) + ", collective " + std::to_string(collective) +
                           ": this program's peer exchange has point-to-point links only");
    }
    return *collectives_;
  }

  std::shared_ptr<PeerPipes> pipes_;
  std::size_t part_;
  std::shared_ptr<PeerExchange> collectives_;
};

PeerPipes::PeerPipes(std::size_t parts, std::chrono::milliseconds timeout, std::size_t depth)
    : parts_(parts), timeout_(timeout), depth_(depth), transfers_(parts) {
  if (parts == 0) throw ExecutionError("peer pipes: a program has at least one part");
  if (depth == 0) throw ExecutionError("peer pipes: a link buffers at least one message");
}

std::shared_ptr<PeerExchange> PeerPipes::exchange(std::size_t part, std::shared_ptr<PeerExchange> collectives) {
  if (part >= parts_) {
    throw ExecutionError("peer pipes: part " + std::to_string(part) + " of a program of " + std::to_string(parts_) +
                         " parts");
  }
  return std::make_shared<PartExchange>(shared_from_this(), part, std::move(collectives));
}

void PeerPipes::cancel(const std::string& reason) {
  std::lock_guard lock(mutex_);
  breakLocked(reason);
}

bool PeerPipes::cancelled() const {
  std::lock_guard lock(mutex_);
  return broken_.has_value();
}

PeerRendezvous::Transfer PeerPipes::transferredBytes(std::size_t part) const {
  std::lock_guard lock(mutex_);
  return part < parts_ ? transfers_[part] : PeerRendezvous::Transfer{};
}

void PeerPipes::breakLocked(const std::string& reason) {
  if (!broken_) broken_ = reason;
  changed_.notify_all();
}

void PeerPipes::fail(std::size_t part, int channel) const {
  throw ExecutionError("part " + std::to_string(part) + ", channel " + std::to_string(channel) + ": " + *broken_);
}

void PeerPipes::checkPart(std::size_t part, std::size_t peer, int channel, const char* role) const {
  if (peer >= parts_ || peer == part) {
    throw ExecutionError("part " + std::to_string(part) + ", channel " + std::to_string(channel) + ": " + role +
                         " part " + std::to_string(peer) + " is not another part of a program of " +
                         std::to_string(parts_) + " parts");
  }
}

template <typename Ready>
void PeerPipes::waitLocked(std::unique_lock<std::mutex>& lock, std::size_t part, int channel,
                           const std::string& waitingFor, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!broken_ && !ready()) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !broken_ && !ready())
      breakLocked("timed out after " + std::to_string(timeout_.count()) + " ms waiting for " + waitingFor);
  }
  if (broken_) fail(part, channel);
}

void PeerPipes::send(std::size_t from, int channel, std::size_t to, std::span<const std::byte> bytes) {
  checkPart(from, to, channel, "peer_send to");
  std::unique_lock lock(mutex_);
  Link& link = links_[{from, to, channel}];
  waitLocked(lock, from, channel,
             "part " + std::to_string(to) + " to take a message of channel " + std::to_string(channel) + " (its " +
                 std::to_string(depth_) + " buffers are full)",
             [&] { return link.queued.size() < depth_; });
  std::vector<std::byte> message;
  if (!link.spare.empty()) {
    message = std::move(link.spare.back());
    link.spare.pop_back();
  }
  lock.unlock();
  message.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(message.data(), bytes.data(), bytes.size());
  lock.lock();
  if (broken_) fail(from, channel);
  link.queued.push_back(std::move(message));
  transfers_[from].sent += bytes.size();
  changed_.notify_all();
}

void PeerPipes::receive(std::size_t to, int channel, std::size_t from, std::span<std::byte> into) {
  checkPart(to, from, channel, "peer_receive from");
  std::unique_lock lock(mutex_);
  Link& link = links_[{from, to, channel}];
  waitLocked(lock, to, channel, "part " + std::to_string(from) + " to send on channel " + std::to_string(channel),
             [&] { return !link.queued.empty(); });
  std::vector<std::byte> message = std::move(link.queued.front());
  link.queued.pop_front();
  if (message.size() != into.size()) {
    breakLocked("part " + std::to_string(from) + " sent " + std::to_string(message.size()) + " bytes on channel " +
                std::to_string(channel) + ", part " + std::to_string(to) + " receives " + std::to_string(into.size()));
    fail(to, channel);
  }
  // Room on the link again: the sender may go on while this part copies.
  changed_.notify_all();
  lock.unlock();
  if (!into.empty()) std::memcpy(into.data(), message.data(), into.size());
  lock.lock();
  transfers_[to].received += into.size();
  link.spare.push_back(std::move(message));
}

}  // namespace qaic::kernels
