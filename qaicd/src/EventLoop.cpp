// SPDX-License-Identifier: Apache-2.0
#include "EventLoop.hpp"

#include <sys/epoll.h>

#include <cstring>

#include "Log.hpp"

namespace qaic::qaicd {

Result<EventLoop> EventLoop::create() {
  UniqueFd fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!fd) return lastError("epoll_create1");
  return EventLoop(std::move(fd));
}

Result<uint64_t> EventLoop::add(int fd, uint32_t events, Handler handler) {
  const uint64_t token = nextToken_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return lastError("epoll_ctl add");
  entries_.emplace(token, Entry{fd, std::move(handler)});
  return token;
}

Result<void> EventLoop::modify(uint64_t token, uint32_t events) {
  auto it = entries_.find(token);
  if (it == entries_.end()) return SysError{ENOENT, "epoll_ctl mod"};
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, it->second.fd, &ev) != 0) return lastError("epoll_ctl mod");
  return {};
}

void EventLoop::remove(uint64_t token) {
  auto it = entries_.find(token);
  if (it == entries_.end()) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
  entries_.erase(it);
}

void EventLoop::run() {
  running_ = true;
  epoll_event events[64];
  bool queued = false;
  while (running_) {
    const int n = ::epoll_wait(epoll_.get(), events, 64, queued ? 0 : 1000);
    if (n < 0) {
      if (errno == EINTR) continue;
      logWarn(std::string("epoll_wait: ") + std::strerror(errno));
      return;
    }
    for (int i = 0; i < n && running_; ++i) {
      auto it = entries_.find(events[i].data.u64);
      if (it == entries_.end()) continue;
      // The handler may remove its own entry: call a copy.
      Handler handler = it->second.handler;
      handler(events[i].data.u64, events[i].events);
    }
    queued = running_ && afterEvents_ && afterEvents_();
  }
}

}  // namespace qaic::qaicd
