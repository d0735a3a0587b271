// SPDX-License-Identifier: Apache-2.0
// The daemon's single event-loop thread: an epoll set whose entries are callbacks keyed by a
// token (not the fd), so an entry removed while its event is still in the batch is skipped
// instead of reaching whoever reuses the descriptor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::qaicd {

class EventLoop {
 public:
  // Handlers receive their own token, so a handler registered for a new client knows its key.
  using Handler = std::function<void(uint64_t token, uint32_t events)>;

  static Result<EventLoop> create();

  // Level-triggered interest in `events` (EPOLLIN, EPOLLOUT) on fd; returns the token.
  Result<uint64_t> add(int fd, uint32_t events, Handler handler);
  Result<void> modify(uint64_t token, uint32_t events);
  void remove(uint64_t token);  // the caller still owns and closes the fd

  // Called after every round of events; returning true means work is still queued, so the next
  // wait only polls. Lets the daemon serve queued requests round robin between clients.
  void setAfterEvents(std::function<bool()> work) { afterEvents_ = std::move(work); }

  // Dispatches events until stop(); every wait is bounded so a stop from a handler is prompt.
  void run();
  void stop() { running_ = false; }

 private:
  explicit EventLoop(UniqueFd epoll) : epoll_(std::move(epoll)) {}

  struct Entry {
    int fd;
    Handler handler;
  };
  UniqueFd epoll_;
  std::map<uint64_t, Entry> entries_;
  std::function<bool()> afterEvents_;
  uint64_t nextToken_ = 1;
  bool running_ = false;
};

}  // namespace qaic::qaicd
