// SPDX-License-Identifier: Apache-2.0
// The threads that run a context's pipeline work (preprocessing and uploads, postprocessing, the
// error handler and notify callbacks): as many as the host has cores, started only when work
// waits for one, and shared by every activation of every inference set of the context. The
// number of threads follows the machine, not the activations a program asks for (docs/runtime.md,
// "Threads").
//
// A job that runs user code which may block for long (BlockingScope) lends out its place: while
// it blocks the pool may start one more thread, up to kMaxThreadsPerCore per core in all, so one
// slow callback does not hold up every other activation of the context.
//
// Jobs carry an owner (a pipeline): cancel(owner) drops its queued jobs, so an owner that is
// going away waits only for those already running.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace qaic::rt {

class WorkerPool {
 public:
  using Clock = std::chrono::steady_clock;
  using Job = std::function<void()>;

  static constexpr unsigned kMaxThreadsPerCore = 4;

  // `threadName` as top and perf show the threads (at most 15 characters); `coreThreads` the
  // threads kept busy at once (0: the host's cores, at least 2).
  explicit WorkerPool(std::string threadName, unsigned coreThreads = 0);
  // Runs no more jobs and joins the threads (a thread of this pool that destroys it is detached
  // and ends when its job returns). Queued jobs are dropped unrun.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(const void* owner, Job job);
  // Runs `job` no earlier than `when`.
  void postAt(const void* owner, Clock::time_point when, Job job);
  // Drops the jobs of `owner` that have not started; returns how many.
  std::size_t cancel(const void* owner);

  // Marks the calling job as possibly blocked until the scope ends (see above). A no-op on a
  // thread that is not one of a pool's.
  class BlockingScope {
   public:
    BlockingScope();
    ~BlockingScope();
    BlockingScope(const BlockingScope&) = delete;
    BlockingScope& operator=(const BlockingScope&) = delete;

   private:
    std::shared_ptr<struct WorkerPoolState> state_;
  };

  unsigned coreThreads() const;
  unsigned maxThreads() const;
  unsigned startedThreads() const;  // so far (threads never end before the pool)

 private:
  std::shared_ptr<struct WorkerPoolState> state_;
};

}  // namespace qaic::rt
