// SPDX-License-Identifier: Apache-2.0
#include "Progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace qaic::runner {
namespace {
constexpr auto kQuietStart = std::chrono::seconds(3);  // short runs print nothing
constexpr auto kRedraw = std::chrono::milliseconds(500);
}  // namespace

Progress::Progress(std::optional<uint64_t> total, std::optional<double> seconds, const std::atomic<uint64_t>& completed)
    : total_(total), seconds_(seconds), completed_(completed) {
  if (::isatty(STDERR_FILENO)) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { stop(); }

void Progress::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (drew_) std::fputs("\r\033[K", stderr);
}

void Progress::run() {
  std::unique_lock lock(mutex_);
  if (wake_.wait_for(lock, kQuietStart, [this] { return stopping_; })) return;
  while (!stopping_) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const uint64_t done = completed_.load();
    double fraction = total_ ? double(done) / double(*total_) : elapsed / *seconds_;
    if (fraction > 1) fraction = 1;
    std::fprintf(stderr, "\r\033[K[%5.1f%%] %llu inferences, %.0f inf/s, %.0fs", fraction * 100,
                 static_cast<unsigned long long>(done), elapsed > 0 ? double(done) / elapsed : 0.0, elapsed);
    std::fflush(stderr);
    drew_ = true;
    wake_.wait_for(lock, kRedraw, [this] { return stopping_; });
  }
}

}  // namespace qaic::runner
