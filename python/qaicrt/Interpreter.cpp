// SPDX-License-Identifier: Apache-2.0
// Calling Python from the runtime's threads, and the order of things at interpreter exit.
//
// A runtime thread (a pipeline or completion thread of an InferenceSet) enters Python only
// through callPython(), which counts itself in `inside` and gives up once `pythonGone` is set.
// The atexit hook runs while the interpreter is still whole: it waits (bounded) for the sets
// that are alive to drain, so the callbacks of inferences in flight run normally, then for the
// threads that release sets off a runtime thread, then sets `pythonGone` and waits for the
// callbacks already inside Python to leave. From then on no runtime thread touches Python, so
// the interpreter's teardown (which destroys the remaining sets, waiting for their threads
// without the GIL) can neither deadlock on the GIL nor have a thread killed inside C++ code
// (Python 3.11 ends threads that take the GIL during finalization with pthread_exit).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "Common.hpp"

namespace qaicrt {
namespace {

using Clock = std::chrono::steady_clock;
// How long exit waits for inferences in flight and their callbacks before Python stops
// answering them; past it the runtime's own bounds (data-path timeouts) still end each set.
constexpr auto kExitDrain = std::chrono::seconds(10);

std::atomic<bool> pythonGone{false};
std::atomic<std::thread::id> exitThread;  // the thread that ran the exit hook (it finalizes the interpreter)
std::atomic<int> inside{0};
thread_local int callbackDepth = 0;

std::atomic<int> pendingCallbacks{0};

std::mutex releaseMutex;
std::condition_variable releaseDone;
int releasing = 0;  // threads started by releaseSafely that have not finished

std::mutex liveMutex;
std::vector<std::weak_ptr<rt::InferenceSet>> liveSets;

void onExit() {
  exitThread = std::this_thread::get_id();
  std::vector<std::shared_ptr<rt::InferenceSet>> sets;
  {
    std::lock_guard lock(liveMutex);
    for (const auto& weak : liveSets)
      if (auto set = weak.lock()) sets.push_back(std::move(set));
    liveSets.clear();
  }
  const auto deadline = Clock::now() + kExitDrain;
  auto remainingUs = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
    return static_cast<uint64_t>(std::max<int64_t>(left, 1));
  };
  {
    py::gil_scoped_release release;
    for (auto& set : sets) {
      try {
        set->waitForCompletion(remainingUs());
      } catch (...) {
        // A set shutting down meanwhile has nothing left to wait for.
      }
      set.reset();  // if this was the last reference the set ends here, without the GIL, as it must
    }
    while (pendingCallbacks.load() > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::unique_lock lock(releaseMutex);
    releaseDone.wait_until(lock, deadline, [] { return releasing == 0; });
  }
  pythonGone = true;
  py::gil_scoped_release release;
  const auto callbacksDeadline = Clock::now() + kExitDrain;
  while (inside.load() > 0 && Clock::now() < callbacksDeadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

bool holdsGil() {
  // The current thread state is the GIL holder's (whatever thread that is): compare threads.
  PyThreadState* current = _PyThreadState_UncheckedGet();
  return current != nullptr && current->thread_id == PyThread_get_thread_ident();
}

namespace {
// Takes the GIL back after a call made without it. A daemon thread coming back after the exit
// hook ran would be ended by Python 3.11 inside PyEval_RestoreThread (pthread_exit through C++
// frames, a crash at exit); it waits for the process to end instead, as it would in Python. A
// runtime thread inside a callback goes on: the exit hook waits for it to leave Python.
void restoreGil(PyThreadState* state) {
  if (pythonGone.load() && callbackDepth == 0 && std::this_thread::get_id() != exitThread.load())
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  PyEval_RestoreThread(state);
}
}  // namespace

void withoutGil(const std::function<void()>& work) {
  if (!holdsGil()) {
    work();
    return;
  }
  PyThreadState* state = PyEval_SaveThread();
  try {
    work();
  } catch (...) {
    restoreGil(state);
    throw;
  }
  restoreGil(state);
}

bool inRuntimeCallback() { return callbackDepth > 0; }

namespace {
// Runs `body` with the GIL, counted in `inside`; false when Python is gone (nothing ran).
bool enterPython(const char* where, const std::function<void()>& body) {
  inside.fetch_add(1);
  struct Leave {
    ~Leave() { inside.fetch_sub(1); }
  } leave;
  if (pythonGone.load()) return false;
  py::gil_scoped_acquire gil;
  ++callbackDepth;
  try {
    body();
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(where);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    PyErr_WriteUnraisable(py::str(where).ptr());
  }
  --callbackDepth;
  return true;
}
}  // namespace

void callPython(const char* where, const std::function<void()>& body) { enterPython(where, body); }

bool runWithGil(const char* where, const std::function<void()>& work) {
  if (holdsGil()) {
    work();
    return true;
  }
  return enterPython(where, work);
}

SharedObject shareObject(py::object object) {
  return SharedObject(new py::object(std::move(object)), [](py::object* pointer) {
    std::vector<py::object> objects;
    objects.push_back(std::move(*pointer));
    dropWithGil(objects);
    delete pointer;
  });
}

void releaseSafely(std::function<void()> release) {
  if (!inRuntimeCallback()) {
    release();
    return;
  }
  {
    std::lock_guard lock(releaseMutex);
    ++releasing;
  }
  std::thread([release = std::move(release)]() mutable {
    release();
    release = nullptr;
    {
      std::lock_guard lock(releaseMutex);
      --releasing;
    }
    releaseDone.notify_all();
  }).detach();
}

void callbackSubmitted() { pendingCallbacks.fetch_add(1); }
void callbackDone() { pendingCallbacks.fetch_sub(1); }

void registerLiveSet(const std::shared_ptr<rt::InferenceSet>& set) {
  std::lock_guard lock(liveMutex);
  std::erase_if(liveSets, [](const auto& weak) { return weak.expired(); });
  liveSets.push_back(set);
}

void installExitHook() {
  py::module_::import("atexit").attr("register")(py::cpp_function([] { onExit(); }));
}

}  // namespace qaicrt
