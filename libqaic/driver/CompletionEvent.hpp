// SPDX-License-Identifier: Apache-2.0
// The "interrupt" of a DBC: an eventfd the device writes to when a response lands in a FIFO the
// host had emptied (docs/device-protocol.md section 3). Pass fd() in the activate transaction.
// libqaic's runtime waits on fd() through io_uring; wait() is the plain poll(2) form for tools
// and tests.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::driver {

class CompletionEvent {
 public:
  static Result<CompletionEvent> create();  // non-blocking, close-on-exec

  int fd() const { return fd_.get(); }
  // Waits up to `timeout` for a signal and consumes it: true if signalled, false on timeout.
  Result<bool> wait(std::chrono::milliseconds timeout) const;

 private:
  explicit CompletionEvent(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace qaic::driver
