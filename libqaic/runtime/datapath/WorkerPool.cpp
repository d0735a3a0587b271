// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/WorkerPool.hpp"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace qaic::rt {

struct WorkerPoolState {
  struct Entry {
    const void* owner = nullptr;
    WorkerPool::Job job;
  };

  std::string threadName;
  unsigned coreThreads = 0;
  unsigned maxThreads = 0;

  std::mutex mutex;
  std::condition_variable ready;  // a job is due, or the pool stops
  std::deque<Entry> jobs;
  std::multimap<WorkerPool::Clock::time_point, Entry> timed;
  std::vector<std::thread> threads;
  unsigned idle = 0;       // threads waiting for a job
  unsigned signalled = 0;  // of those, woken for a job and not yet running
  unsigned blocking = 0;   // jobs inside a BlockingScope
  bool stopping = false;

  // A job is waiting and no thread will take it soon: start one, within the bounds. Lock held.
  void growLocked(const std::shared_ptr<WorkerPoolState>& self) {
    if (stopping || jobs.empty()) return;
    if (idle > signalled) {
      ++signalled;
      ready.notify_one();
      return;
    }
    const auto started = static_cast<unsigned>(threads.size());
    if (started - std::min(started, blocking) >= coreThreads || started >= maxThreads) return;
    startThreadLocked(self);
  }

  // The thread holds the state, so it outlives a pool destroyed by one of its own jobs.
  void startThreadLocked(const std::shared_ptr<WorkerPoolState>& self) {
    threads.emplace_back([self] { self->run(self); });
  }

  void run(const std::shared_ptr<WorkerPoolState>& self);
};

namespace {

// The pool state whose thread this is, for BlockingScope.
thread_local std::shared_ptr<WorkerPoolState> tCurrentPool;

}  // namespace

void WorkerPoolState::run(const std::shared_ptr<WorkerPoolState>& self) {
  ::pthread_setname_np(::pthread_self(), threadName.c_str());
  tCurrentPool = self;
  std::unique_lock lock(mutex);
  for (;;) {
    const auto now = WorkerPool::Clock::now();
    while (!timed.empty() && timed.begin()->first <= now) {
      jobs.push_back(std::move(timed.begin()->second));
      timed.erase(timed.begin());
    }
    if (stopping) break;
    if (!jobs.empty()) {
      WorkerPool::Job job = std::move(jobs.front().job);
      jobs.pop_front();
      growLocked(self);  // the next job's thread
      lock.unlock();
      job();
      job = nullptr;  // what it captured goes before the lock is taken again
      lock.lock();
      continue;
    }
    ++idle;
    if (timed.empty()) {
      ready.wait(lock);
    } else {
      const auto until = timed.begin()->first;  // a copy: cancel() may erase the entry meanwhile
      ready.wait_until(lock, until);
    }
    --idle;
    if (signalled > 0) --signalled;
  }
  lock.unlock();
  tCurrentPool.reset();
}

WorkerPool::WorkerPool(std::string threadName, unsigned coreThreads) : state_(std::make_shared<WorkerPoolState>()) {
  if (coreThreads == 0) coreThreads = std::max(2u, std::thread::hardware_concurrency());
  state_->threadName = threadName.substr(0, 15);
  state_->coreThreads = coreThreads;
  state_->maxThreads = coreThreads * kMaxThreadsPerCore;
}

WorkerPool::~WorkerPool() {
  std::vector<std::thread> threads;
  std::deque<WorkerPoolState::Entry> dropped;
  std::multimap<Clock::time_point, WorkerPoolState::Entry> droppedTimed;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    threads.swap(state_->threads);
    dropped.swap(state_->jobs);
    droppedTimed.swap(state_->timed);
  }
  state_->ready.notify_all();
  for (std::thread& thread : threads) {
    if (thread.get_id() == std::this_thread::get_id())
      thread.detach();  // it holds the state and ends when the job destroying us returns
    else
      thread.join();
  }
}

void WorkerPool::post(const void* owner, Job job) {
  std::lock_guard lock(state_->mutex);
  if (state_->stopping) return;
  state_->jobs.push_back({owner, std::move(job)});
  state_->growLocked(state_);
}

void WorkerPool::postAt(const void* owner, Clock::time_point when, Job job) {
  std::lock_guard lock(state_->mutex);
  if (state_->stopping) return;
  const bool earliest = state_->timed.empty() || when < state_->timed.begin()->first;
  state_->timed.emplace(when, WorkerPoolState::Entry{owner, std::move(job)});
  if (state_->threads.empty()) {
    // A timer needs a thread to wait for it.
    state_->startThreadLocked(state_);
  } else if (earliest && state_->idle > 0) {
    state_->ready.notify_all();  // the waiting threads sleep until the new earliest time
  }
}

std::size_t WorkerPool::cancel(const void* owner) {
  std::vector<Job> dropped;  // destroyed after the lock is released
  std::lock_guard lock(state_->mutex);
  for (auto it = state_->jobs.begin(); it != state_->jobs.end();) {
    if (it->owner == owner) {
      dropped.push_back(std::move(it->job));
      it = state_->jobs.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = state_->timed.begin(); it != state_->timed.end();) {
    if (it->second.owner == owner) {
      dropped.push_back(std::move(it->second.job));
      it = state_->timed.erase(it);
    } else {
      ++it;
    }
  }
  return dropped.size();
}

unsigned WorkerPool::coreThreads() const { return state_->coreThreads; }
unsigned WorkerPool::maxThreads() const { return state_->maxThreads; }
unsigned WorkerPool::startedThreads() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<unsigned>(state_->threads.size());
}

WorkerPool::BlockingScope::BlockingScope() : state_(tCurrentPool) {
  if (!state_) return;
  std::lock_guard lock(state_->mutex);
  ++state_->blocking;
  state_->growLocked(state_);
}

WorkerPool::BlockingScope::~BlockingScope() {
  if (!state_) return;
  std::lock_guard lock(state_->mutex);
  --state_->blocking;
}

}  // namespace qaic::rt
