// SPDX-License-Identifier: Apache-2.0
// What the parts of the qaicrt module share: the exceptions, the rules for calling Python from
// the runtime's threads, and the Python-side owners of buffers.
//
// Threads. Every call into libqaic that can block or take a runtime lock releases the GIL, and
// every call from a runtime thread into Python (notify callbacks, the log callback, the error
// handler, profiling reports) takes it. An exception raised there goes to sys.unraisablehook.
// At interpreter exit (atexit) the module first lets the inferences in flight finish and their
// callbacks run, then stops calling into Python, so that exit neither hangs nor crashes.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <qaic/qaic.hpp>

#include "Enums.hpp"

QAICRT_INT_ENUM(qaic::rt::QStatus, "QStatus")
QAICRT_INT_ENUM(qaic::rt::QLogLevel, "QLogLevel")
QAICRT_INT_ENUM(qaic::rt::QAicBufferDataTypeEnum, "QAicBufferDataTypeEnum")
QAICRT_INT_ENUM(qaic::rt::QAicBufferIoTypeEnum, "QAicBufferIoTypeEnum")
QAICRT_INT_ENUM(qaic::rt::QBufferType, "QBufferType")
QAICRT_INT_ENUM(qaic::rt::ProfilingType, "ProfilingType")

namespace qaicrt {

namespace py = pybind11;
namespace rt = qaic::rt;

// ---- exceptions (Errors.cpp) ----------------------------------------------------------------
// qaicrt.Error (a RuntimeError) with .status and .message; InvalidArgumentError (also a
// ValueError) for QS_INVAL, QS_BUFFER_SIZE, QS_BUFFER_DIMS; TimedOutError (also a TimeoutError)
// for QS_TIMEDOUT. str(e) is "QS_NAME: message".
[[noreturn]] void raiseStatus(rt::QStatus status, const std::string& message);
void bindErrors(py::module_& m);

// ---- the interpreter's life (Interpreter.cpp) -------------------------------------------------
// True while this thread holds the GIL.
bool holdsGil();
// Runs `work` with the GIL released if this thread holds it.
void withoutGil(const std::function<void()>& work);
// The same for work that returns a value (a status, dims, a new object): returns it.
template <typename Work, typename Value = std::invoke_result_t<Work&>>
requires(!std::is_void_v<Value>) Value withoutGil(Work&& work) {
  Value value{};
  withoutGil(std::function<void()>([&] { value = work(); }));
  return value;
}
// Calls `body` with the GIL on any thread, unless the interpreter is shutting down (then not at
// all). A Python exception escaping `body` is reported through sys.unraisablehook with `where`.
void callPython(const char* where, const std::function<void()>& body);
// True on a runtime thread while it runs Python code for a callback.
bool inRuntimeCallback();
// Runs `release` now, or, on a runtime thread inside a callback (where destroying the set that
// owns the thread would join the thread itself), on a short-lived thread that the interpreter's
// exit waits for.
void releaseSafely(std::function<void()> release);
// Runs `work` with the GIL (taken when this thread lacks it); false, without running it, once
// the interpreter is shutting down.
bool runWithGil(const char* where, const std::function<void()>& work);
// Drops objects that hold Python references, from any thread: with the GIL while the interpreter
// is alive, else leaked (no reference count may change once it is shutting down).
template <typename T>
void dropWithGil(std::vector<T>& objects) {
  if (objects.empty()) return;
  if (!runWithGil("qaicrt: releasing Python objects", [&] { objects.clear(); }))
    new std::vector<T>(std::move(objects));  // deliberately never freed
  objects.clear();
}

// A Python object that runtime threads may copy and drop without the GIL (inside a
// std::function): the last reference takes the GIL to release it.
using SharedObject = std::shared_ptr<py::object>;
SharedObject shareObject(py::object object);

// Sets that may still have inferences in flight when the interpreter exits; the atexit hook
// waits for them (bounded) before Python stops.
void registerLiveSet(const std::shared_ptr<rt::InferenceSet>& set);
// Notify callbacks submitted and not yet run: the atexit hook waits for them too (a set drains
// before its last callbacks have been called).
void callbackSubmitted();
void callbackDone();
void installExitHook();

// ---- buffers (Buffers.cpp) ------------------------------------------------------------------
// A QBuffer and the Python object whose memory it points into. A buffer-protocol export is held
// for the QBuffer's life: the memory cannot move (a bytearray cannot be resized meanwhile) and
// the object cannot go away while the runtime may use it.
class PyQBuffer {
 public:
  // Heap: any C-contiguous buffer-protocol object (numpy array, bytearray, memoryview, bytes).
  // `what` names the buffer in errors ("QBuffer", "buffer 'x' (index 1)"): TypeError for an
  // object without a buffer, InvalidArgumentError for a buffer that is not C-contiguous or that
  // its object cannot export (the object's own reason, e.g. numpy's for an object dtype).
  explicit PyQBuffer(const py::object& source, const std::string& what = "QBuffer");
  // DMA: a region of a DmaBuffer; `owner` is the DmaBuffer's Python object.
  PyQBuffer(const rt::QBuffer& region, py::object owner);
  ~PyQBuffer();
  PyQBuffer(const PyQBuffer&) = delete;
  PyQBuffer& operator=(const PyQBuffer&) = delete;

  const rt::QBuffer& qbuffer() const { return buffer_; }
  bool writable() const { return writable_; }
  const py::object& owner() const { return owner_; }
  // What the source was, for messages: "numpy.ndarray", "bytes", "DmaBuffer".
  std::string describe() const;

 private:
  rt::QBuffer buffer_;
  py::object owner_;
  Py_buffer view_{};
  bool hasView_ = false;
  bool writable_ = true;
};

// A sequence of QBuffer or buffer-protocol objects as QBuffers (objects wrapped without creating
// Python objects: this runs for every inference) and the runtime's QBuffers.
using SharedQBuffer = std::shared_ptr<PyQBuffer>;
struct BufferList {
  std::vector<SharedQBuffer> owners;
  std::vector<rt::QBuffer> buffers;
};
// `nameOf(k)` names item k in errors.
BufferList toBufferList(const py::sequence& items, const std::function<std::string(std::size_t)>& nameOf);

void bindBuffers(py::module_& m);
void bindQpc(py::module_& m);
void bindContext(py::module_& m);
void bindInferenceSet(py::module_& m);
void bindGroupAndProfiling(py::module_& m);
void bindUtil(py::module_& m);

// ---- arguments (Arguments.cpp) -------------------------------------------------------------
// The items of a sequence argument (not str or bytes). TypeError naming `what` for anything else
// and for a sequence whose items cannot be read.
std::vector<py::object> itemsOf(const py::handle& value, const std::string& what);
// An integer (operator.index) in [0, max]: TypeError or ValueError naming `what`.
uint64_t unsignedOf(const py::handle& value, const std::string& what, uint64_t max);
// A sequence of such integers, each named "what[i]" in errors.
std::vector<uint64_t> dimsOf(const py::handle& value, const std::string& what);
// True for an error an argument's own code raised (an Exception, not MemoryError): one the
// bindings report as the argument's TypeError or ValueError. KeyboardInterrupt, SystemExit and
// MemoryError stay what they are.
bool raisedByTheArgument(const py::error_already_set& error);

// ---- shared wrappers ------------------------------------------------------------------------
// Python's Context: the runtime's, destroyed without the GIL (its log callback and error handler
// may be waiting for it on runtime threads).
struct PyContext {
  std::shared_ptr<rt::Context> context;
  ~PyContext();
};

// Python's DmaBuffer: freeing the buffer object talks to the device; done without the GIL.
struct PyDma {
  std::shared_ptr<rt::DmaBuffer> dma;
  ~PyDma();
};

// Python's InferenceSetGroup, likewise.
struct PyGroup {
  std::shared_ptr<rt::InferenceSetGroup> group;
  ~PyGroup();
};

// Python's InferenceSet: the runtime's set and, per handle, the QBuffer objects last set on it,
// kept until they are replaced or the set is gone (the runtime holds their raw pointers).
// Handles hold the state, so the set outlives every handle object.
struct SetState {
  std::shared_ptr<rt::InferenceSet> set;
  std::shared_ptr<rt::Qpc> qpc;
  std::vector<bool> isInput;  // per buffer index, from the program's mappings
  std::vector<std::string> names;
  std::unordered_map<const rt::InferenceHandle*, std::vector<SharedQBuffer>> owners;  // GIL guarded
  ~SetState();
};

}  // namespace qaicrt
