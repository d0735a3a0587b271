// The emulated NSPs' compute threads: a bounded pool (at most the host's cores) shared by every
// activation of every device. Each activation is pinned to one worker, which builds, runs and
// destroys its program: oneDNN keeps per-thread state (its scratchpad) tied to the thread that
// created a primitive, so a program must live and run on one thread that outlives it. After a
// run the worker may also continue its activation's ring (DbcChannel.cpp), never blocking in it.
// Owned by the Emulator; stop() runs the jobs already queued, then ends the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace qaic::emu {

class NspPool {
 public:
  explicit NspPool(unsigned threads);  // 0 = host cores
  ~NspPool();
  NspPool(const NspPool&) = delete;
  NspPool& operator=(const NspPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  unsigned pick();  // the worker for a new activation (round robin)
  // Queues a job on `worker`; false once the pool is stopping (the job is not run).
  bool submit(unsigned worker, std::function<void()> job);
  // Runs `fn` on `worker` and waits up to `timeout`; nullopt on timeout or a stopping pool (a
  // late result is then destroyed on the worker).
  template <typename Fn>
  auto call(unsigned worker, Fn fn, std::chrono::milliseconds timeout)
      -> std::optional<decltype(fn())>;
  void stop();

 private:
  struct Worker {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<std::function<void()>> jobs;
    bool stopping = false;
    std::thread thread;
  };
  static void work(Worker& w);
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<unsigned> next_{0};
};

template <typename Fn>
auto NspPool::call(unsigned worker, Fn fn, std::chrono::milliseconds timeout)
    -> std::optional<decltype(fn())> {
  using R = decltype(fn());
  auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
  auto result = task->get_future();
  if (!submit(worker, [task] { (*task)(); })) return std::nullopt;
  if (result.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace qaic::emu
