// SPDX-License-Identifier: Apache-2.0
// A one-line progress display on stderr for runs longer than a few seconds, only when stderr is
// a terminal. Its thread is owned by this object and stops in the destructor (or stop()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace qaic::runner {

class Progress {
 public:
  // total: inferences expected (-n), or nullopt with a duration (--time).
  Progress(std::optional<uint64_t> total, std::optional<double> seconds, const std::atomic<uint64_t>& completed);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void stop();

 private:
  void run();
  std::optional<uint64_t> total_;
  std::optional<double> seconds_;
  const std::atomic<uint64_t>& completed_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool drew_ = false;
  std::thread thread_;
};

}  // namespace qaic::runner
