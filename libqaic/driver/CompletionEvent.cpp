// SPDX-License-Identifier: Apache-2.0
#include "driver/CompletionEvent.hpp"

#include <poll.h>
#include <sys/eventfd.h>

namespace qaic::driver {

Result<CompletionEvent> CompletionEvent::create() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) return lastError("eventfd");
  return CompletionEvent(std::move(fd));
}

Result<bool> CompletionEvent::wait(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    uint64_t count = 0;
    if (::read(fd_.get(), &count, sizeof count) == sizeof count) return true;
    if (errno != EAGAIN && errno != EINTR) return lastError("read eventfd");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return lastError("poll eventfd");
  }
}

}  // namespace qaic::driver
