// SPDX-License-Identifier: Apache-2.0
// PeerPipes: the point-to-point links between the stages of a pipelined multi-device program
// (peer_send / peer_receive) whose parts run in one process, as the emulator's cards do. A link
// is one (sending part, receiving part, channel) and buffers at most `depth` messages: a send
// copies its bytes into a free buffer of the link and returns, so a stage can go on to its next
// inference while the next stage still works on this one; it waits only when the link is full.
// A receive waits for the next message and copies it out. Buffers are kept and reused, so the
// steady state allocates nothing.
//
// Every wait ends at `timeout` or at cancel(reason): the pipes are then broken for good, and
// every waiting and later send or receive throws ExecutionError naming its part, its channel
// and the reason, as a broken kernels::PeerRendezvous does. A message whose size is not the
// receiver's breaks them the same way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/PeerExchange.hpp"
#include "kernels/PeerRendezvous.hpp"

namespace qaic::kernels {

class PeerPipes : public std::enable_shared_from_this<PeerPipes> {
 public:
  // Two: the receiver's current message and the next, which is what lets the stages overlap.
  static constexpr std::size_t kDefaultDepth = 2;

  // Create it with std::make_shared: each exchange keeps the pipes alive.
  PeerPipes(std::size_t parts, std::chrono::milliseconds timeout, std::size_t depth = kDefaultDepth);

  std::size_t parts() const { return parts_; }
  // Part `part`'s exchange: its sends and receives go through these pipes, its collectives to
  // `collectives` (null: a collective throws, as an exchange without them does). Throws
  // ExecutionError for a part out of range.
  std::shared_ptr<PeerExchange> exchange(std::size_t part, std::shared_ptr<PeerExchange> collectives = nullptr);

  void send(std::size_t from, int channel, std::size_t to, std::span<const std::byte> bytes);
  void receive(std::size_t to, int channel, std::size_t from, std::span<std::byte> into);

  // Breaks the pipes; the first reason given is the one every error names.
  void cancel(const std::string& reason);
  bool cancelled() const;

  // Bytes part `part` sent and received over the links (the p2p counters count them).
  PeerRendezvous::Transfer transferredBytes(std::size_t part) const;

 private:
  class PartExchange;
  struct Link {
    std::deque<std::vector<std::byte>> queued;  // sent, not yet received, oldest first
    std::vector<std::vector<std::byte>> spare;  // buffers received from, for the next sends
  };
  using LinkKey = std::tuple<std::size_t, std::size_t, int>;  // from, to, channel

  void checkPart(std::size_t part, std::size_t peer, int channel, const char* role) const;
  // Waits on `ready` until it holds, the pipes break or the deadline passes (which breaks them
  // with `waitingFor` as the reason). Throws once broken.
  template <typename Ready>
  void waitLocked(std::unique_lock<std::mutex>& lock, std::size_t part, int channel, const std::string& waitingFor,
                  Ready ready);
  [[noreturn]] void fail(std::size_t part, int channel) const;
  void breakLocked(const std::string& reason);

  const std::size_t parts_;
  const std::chrono::milliseconds timeout_;
  const std::size_t depth_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<LinkKey, Link> links_;
  std::optional<std::string> broken_;
  std::vector<PeerRendezvous::Transfer> transfers_;
};

}  // namespace qaic::kernels
