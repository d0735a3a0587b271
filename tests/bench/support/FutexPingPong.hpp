// SPDX-License-Identifier: Apache-2.0
// The baseline of the ring round trip: a second process answers every ping on a shared futex
// word with a pong on another. One round trip is the cheapest "wake another process and hear
// back" the kernel offers, so the no-op ring request is reported as a multiple of it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

namespace qaic::bench {

class FutexPingPong {
 public:
  // Maps the shared words and forks the responder; ok() says whether that worked.
  FutexPingPong();
  // Tells the responder to stop and reaps it (SIGKILL if it does not exit within a second).
  ~FutexPingPong();
  FutexPingPong(const FutexPingPong&) = delete;
  FutexPingPong& operator=(const FutexPingPong&) = delete;

  bool ok() const { return responder_ > 0; }
  // One ping and its pong; false when no pong came within `timeout`.
  bool roundTrip(std::chrono::milliseconds timeout);

 private:
  struct Words {
    uint32_t ping;
    uint32_t pong;
    uint32_t stop;
  };
  Words* words_ = nullptr;
  pid_t responder_ = -1;
  uint32_t sequence_ = 0;
};

}  // namespace qaic::bench
