#include "NspPool.hpp"

#include <pthread.h>
#include <algorithm>

namespace qaic::emu {

NspPool::NspPool(unsigned threads) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = threads == 0 ? cores : std::min(threads, cores);
  for (unsigned i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker& w = *workers_.back();
    w.thread = std::thread([&w] {
      ::pthread_setname_np(::pthread_self(), "emu-nsp");
      work(w);
    });
  }
}

NspPool::~NspPool() { stop(); }

unsigned NspPool::pick() { return next_.fetch_add(1) % size(); }

bool NspPool::submit(unsigned worker, std::function<void()> job) {
  Worker& w = *workers_[worker % workers_.size()];
  {
    std::lock_guard lock(w.mutex);
    if (w.stopping) return false;
    w.jobs.push_back(std::move(job));
  }
  w.ready.notify_one();
  return true;
}

void NspPool::stop() {
  for (auto& w : workers_) {
    {
      std::lock_guard lock(w->mutex);
      w->stopping = true;
    }
    w->ready.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void NspPool::work(Worker& w) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(w.mutex);
      w.ready.wait(lock, [&] { return w.stopping || !w.jobs.empty(); });
      // Queued jobs still run when stopping: they destroy programs on their own thread, and
      // runs of stopped activations return at once.
      if (w.jobs.empty()) return;
      job = std::move(w.jobs.front());
      w.jobs.pop_front();
    }
    job();
  }
}

}  // namespace qaic::emu
