// SPDX-License-Identifier: Apache-2.0
// InferenceSet, InferenceHandle and their properties (seed 001). Waits return the QStatus the C++
// API returns (with the handle, as a tuple, where C++ fills one in); misuse raises qaicrt.Error.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "Common.hpp"

namespace qaicrt {
namespace {

struct PyInferenceSetProperties {
  rt::ProgramProperties programProperties;
  rt::QueueProperties queueProperties;
  std::shared_ptr<PyGroup> inferenceSetGroup;
  std::string name;
  uint32_t id = 0;
};

struct PyHandle {
  std::shared_ptr<SetState> state;
  rt::shInferenceHandle handle;
};

// The handle's own lock is taken by the runtime's threads too: never wait for it with the GIL.
uint64_t requestIdOf(const PyHandle& h) {
  return withoutGil([&] { return h.handle->getId(); });
}

py::object handleObject(const std::shared_ptr<SetState>& state, rt::shInferenceHandle handle) {
  if (!handle) return py::none();
  return py::cast(PyHandle{state, std::move(handle)});
}

// A wait that fills in a handle (getAvailable, getCompletedId...), run without the GIL:
// (status, handle or None).
template <typename Wait>
py::tuple waitForHandle(const std::shared_ptr<SetState>& state, Wait&& wait) {
  rt::shInferenceHandle handle;
  const rt::QStatus status = withoutGil([&] { return wait(handle); });
  return py::make_tuple(status, handleObject(state, std::move(handle)));
}

std::shared_ptr<SetState> makeSet(PyContext& context, std::shared_ptr<rt::Qpc> qpc, rt::QID device, uint32_t setSize,
                                  uint32_t numActivations, const PyInferenceSetProperties* properties) {
  if (!qpc) raiseStatus(rt::QS_INVAL, "InferenceSet: qpc is None");
  rt::InferenceSetProperties props;
  if (properties != nullptr) {
    props.programProperties = properties->programProperties;
    props.queueProperties = properties->queueProperties;
    if (properties->inferenceSetGroup) props.inferenceSetGroup = properties->inferenceSetGroup->group;
    props.name = properties->name;
    props.id = properties->id;
  }
  auto state = std::make_shared<SetState>();
  state->qpc = qpc;
  for (const auto& mapping : qpc->getBufferMappings()) {
    state->isInput.push_back(mapping.ioType == rt::BUFFER_IO_TYPE_INPUT);
    state->names.push_back(mapping.bufferName);
  }
  withoutGil([&] {
    state->set = rt::InferenceSet::Factory(context.context, qpc, device, setSize, numActivations,
                                           properties ? &props : nullptr);
  });
  registerLiveSet(state->set);
  return state;
}

// Indices of the buffers setBuffers (all), setInputBuffers or setOutputBuffers address.
enum class Which { All, Inputs, Outputs };
std::vector<std::size_t> indicesOf(const SetState& state, Which which) {
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < state.isInput.size(); ++i)
    if (which == Which::All || (which == Which::Inputs) == state.isInput[i]) indices.push_back(i);
  return indices;
}

// How errors name item k of a list given for `indices`: "buffer 'x' (index 2)", or "item 3 (the
// program has 3 buffers)" past them (the runtime then refuses the count).
std::function<std::string(std::size_t)> namesOf(const SetState& state, const std::vector<std::size_t>& indices) {
  return [&state, &indices](std::size_t k) {
    if (k < indices.size())
      return "buffer '" + state.names[indices[k]] + "' (index " + std::to_string(indices[k]) + ")";
    return "item " + std::to_string(k) + " (the program has " + std::to_string(indices.size()) + " such buffers)";
  };
}

// The runtime checks the count; outputs must be writable memory, which only Python knows.
void checkWritable(const SetState& state, const BufferList& list, const std::vector<std::size_t>& indices) {
  for (std::size_t k = 0; k < list.owners.size() && k < indices.size(); ++k) {
    const auto i = indices[k];
    const PyQBuffer& buffer = *list.owners[k];
    if (!state.isInput[i] && !buffer.writable())
      raiseStatus(rt::QS_INVAL, "buffer '" + state.names[i] + "' (index " + std::to_string(i) +
                                    ") is an output, but its QBuffer is read-only (" + buffer.describe() + ")");
  }
}

void setBuffers(PyHandle& h, const py::sequence& items, Which which) {
  const auto indices = indicesOf(*h.state, which);
  BufferList list = toBufferList(items, namesOf(*h.state, indices));
  checkWritable(*h.state, list, indices);
  withoutGil([&] {
    if (which == Which::All)
      h.handle->setBuffers(list.buffers);
    else if (which == Which::Inputs)
      h.handle->setInputBuffers(list.buffers);
    else
      h.handle->setOutputBuffers(list.buffers);
  });
  auto& owners = h.state->owners[h.handle.get()];
  owners.resize(h.state->isInput.size());
  for (std::size_t k = 0; k < indices.size(); ++k) owners[indices[k]] = std::move(list.owners[k]);
}

py::list buffersOf(const PyHandle& h, Which which) {
  py::list result;
  auto it = h.state->owners.find(h.handle.get());
  for (auto i : indicesOf(*h.state, which)) {
    if (it != h.state->owners.end() && it->second[i])
      result.append(py::cast(it->second[i]));
    else
      result.append(py::none());
  }
  return result;
}

// The notify callback of one submission: the set stays alive until it has run (an inference in
// flight may outlive every Python reference to its set), then lets go of everything.
struct NotifySlot {
  std::shared_ptr<SetState> state;
  std::vector<py::object> objects;  // the function and its userData
  std::atomic<bool> done{false};    // counted out of the pending callbacks
  void finish() {
    if (!done.exchange(true)) callbackDone();
  }
};

void submitWithCallback(const std::shared_ptr<SetState>& state, PyHandle& h, const py::function& fn,
                        const py::object& userData) {
  callbackSubmitted();
  auto slot = std::shared_ptr<NotifySlot>(new NotifySlot{state, {fn, userData}}, [](NotifySlot* s) {
    s->finish();  // never called (a failed submit, or Python gone first)
    dropWithGil(s->objects);
    auto held = std::move(s->state);
    delete s;
    if (held) releaseSafely([held = std::move(held)]() mutable { held.reset(); });
  });
  rt::NotifyFn notify = [slot](const rt::shInferenceHandle& handle, void*) {
    callPython("qaicrt: InferenceSet notify callback", [&] {
      std::shared_ptr<SetState> owner = std::move(slot->state);
      std::vector<py::object> objects = std::move(slot->objects);
      if (!owner || objects.size() != 2) return;  // already delivered
      objects[0](handleObject(owner, handle), objects[1]);
    });
    slot->finish();
  };
  withoutGil([&] { state->set->submit(h.handle, std::move(notify), nullptr); });
}

// qaic.Session.run's fast path, not part of seed 001's API: getAvailable, setBuffers (with dims
// and dropped buffers), submit, waitForCompletion and putCompleted in one call that gives the GIL
// up once, the same public calls a C++ program makes. Returns (status, error message, output dims
// by buffer index or None, performance counts or None).
using PerBuffer = std::optional<std::vector<std::optional<std::vector<uint64_t>>>>;  // None, or by index
using PerBufferFlag = std::optional<std::vector<std::optional<bool>>>;

// _runSync's dims: None, or by buffer index None or the buffer's dims.
PerBuffer perBufferDims(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  std::vector<std::optional<std::vector<uint64_t>>> dims;
  const auto items = itemsOf(value, "dims");
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].is_none())
      dims.emplace_back();
    else
      dims.emplace_back(dimsOf(items[i], "dims[" + std::to_string(i) + "]"));
  }
  return dims;
}

// _runSync's skipped: None, or by buffer index None or a flag (a bool or an integer).
PerBufferFlag perBufferFlags(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  std::vector<std::optional<bool>> flags;
  const auto items = itemsOf(value, "skipped");
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].is_none()) {
      flags.emplace_back();
    } else if (py::isinstance<py::bool_>(items[i])) {
      flags.emplace_back(items[i].cast<bool>());
    } else {
      flags.emplace_back(unsignedOf(items[i], "skipped[" + std::to_string(i) + "]", 1) != 0);
    }
  }
  return flags;
}

py::tuple runSync(const std::shared_ptr<SetState>& s, const py::sequence& items, uint64_t requestId,
                  const py::object& dimsArgument, const py::object& skippedArgument, bool outputDims,
                  bool performanceCounts, std::optional<uint32_t> activation) {
  const PerBuffer dims = perBufferDims(dimsArgument);
  const PerBufferFlag skipped = perBufferFlags(skippedArgument);
  const auto all = indicesOf(*s, Which::All);
  BufferList list = toBufferList(items, namesOf(*s, all));
  checkWritable(*s, list, all);
  rt::shInferenceHandle handle;
  rt::QStatus status = rt::QS_SUCCESS;
  std::string message;
  std::vector<std::optional<std::vector<uint64_t>>> produced;
  std::map<std::string, rt::PerfCounter> counts;
  std::exception_ptr failure;
  bool buffersSet = false;
  withoutGil([&] {
    // A sequence of a retained-state program stays on the activation holding its state.
    status = activation ? s->set->getAvailableOnActivation(*activation, handle, 0) : s->set->getAvailable(handle, 0);
    if (!handle) return;
    try {
      handle->setBuffers(list.buffers);
      buffersSet = true;
      for (std::size_t i = 0; dims && i < dims->size(); ++i)
        if ((*dims)[i]) handle->setBufferDims(static_cast<uint32_t>(i), *(*dims)[i]);
      for (std::size_t i = 0; skipped && i < skipped->size(); ++i)
        if ((*skipped)[i]) handle->setBufferSkipped(static_cast<uint32_t>(i), *(*skipped)[i]);
      s->set->submit(handle, requestId);
      status = s->set->waitForCompletion(handle, 0);
      if (status != rt::QS_SUCCESS) message = handle->getErrorMessage();
      if (outputDims)
        for (std::size_t i = 0; i < s->isInput.size(); ++i)
          produced.push_back(s->isInput[i] ? std::nullopt
                                           : std::optional(handle->getOutputDims(static_cast<uint32_t>(i))));
      if (performanceCounts) counts = handle->getPerformanceCounts();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (!handle) return py::make_tuple(status, "no inference handle became available", py::none(), py::none());
  // The handle keeps pointing at these buffers after it is given back (a later user may submit
  // it again as it is), so they stay alive with it, as setBuffers' do.
  if (buffersSet) {
    auto& owners = s->owners[handle.get()];
    owners = std::move(list.owners);
    owners.resize(s->isInput.size());
  }
  withoutGil([&] { s->set->putCompleted(handle); });
  if (failure) std::rethrow_exception(failure);
  return py::make_tuple(status, message, outputDims ? py::cast(produced) : py::none(),
                        performanceCounts ? py::cast(counts) : py::none());
}

// qaic.Session.run_benchmark's loop, not part of seed 001's API: the handles given (acquired,
// their buffers set) are submitted and, as each completes, submitted again until `count` were
// submitted or `seconds` passed, with the GIL given up for the whole run, so that the figure is
// the program's throughput and not the interpreter's. One thread per activation waits for that
// activation's handles in submission order (handle i of a set belongs to activation
// i / setSize, docs/runtime.md): a thread waiting for one handle takes the completion thread's
// place, the fastest wait the runtime has, and no activation idles while another's handles are
// waited for. Every handle is given back. Returns (completed, seconds from the first submit to
// the last completion, first failure's status, its message).
py::tuple keepBusy(const std::shared_ptr<SetState>& s, const std::vector<PyHandle*>& handles, uint64_t firstRequestId,
                   std::optional<uint64_t> count, std::optional<double> seconds) {
  using Clock = std::chrono::steady_clock;
  const uint32_t setSize = s->set->getSetSize();
  std::atomic<uint64_t> submitted{0}, completed{0}, nextId{firstRequestId};
  std::mutex failureMutex;
  rt::QStatus failedStatus = rt::QS_SUCCESS;
  std::string failedMessage;
  std::exception_ptr error;
  std::atomic<bool> stop{false};
  const auto start = Clock::now();
  const auto deadline = seconds
                            ? start +
                                  std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*seconds))
                            : Clock::time_point::max();
  auto more = [&] {
    if (stop.load() || Clock::now() >= deadline) return false;
    return !count || submitted.fetch_add(1) < *count;
  };
  auto activation = [&](std::vector<rt::shInferenceHandle> own) {
    std::deque<rt::shInferenceHandle> pending;
    try {
      for (auto& handle : own) {
        if (more()) {
          s->set->submit(handle, nextId.fetch_add(1));
          pending.push_back(std::move(handle));
        } else {
          s->set->putCompleted(handle);
        }
      }
      while (!pending.empty()) {
        rt::shInferenceHandle handle = std::move(pending.front());
        pending.pop_front();
        const rt::QStatus status = s->set->waitForCompletion(handle, 0);
        if (status == rt::QS_SUCCESS) {
          completed.fetch_add(1);
        } else {
          std::lock_guard lock(failureMutex);
          if (failedStatus == rt::QS_SUCCESS) {
            failedStatus = status;
            failedMessage = handle->getErrorMessage();
          }
          stop = true;
        }
        s->set->putCompleted(handle);
        if (more()) {
          // The handle just given back (or another activation's, which runs just as well).
          if (s->set->getAvailable(handle, 0) != rt::QS_SUCCESS) break;
          s->set->submit(handle, nextId.fetch_add(1));
          pending.push_back(std::move(handle));
        }
      }
    } catch (...) {
      std::lock_guard lock(failureMutex);
      if (!error) error = std::current_exception();
      stop = true;
    }
    for (auto& handle : pending) {  // after an error: let what is in flight finish, give it back
      s->set->waitForCompletion(handle, 0);
      s->set->putCompleted(handle);
    }
  };
  std::vector<std::vector<rt::shInferenceHandle>> groups;
  for (std::size_t i = 0; i < handles.size(); ++i)
    if (handles[i] == nullptr) raiseStatus(rt::QS_INVAL, "_keepBusy: handles[" + std::to_string(i) + "] is None");
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const std::size_t group = setSize ? i / setSize : 0;
    if (groups.size() <= group) groups.resize(group + 1);
    groups[group].push_back(handles[i]->handle);
  }
  Clock::time_point end;
  withoutGil([&] {
    std::vector<std::thread> threads;
    for (std::size_t g = 1; g < groups.size(); ++g) threads.emplace_back(activation, std::move(groups[g]));
    if (!groups.empty()) activation(std::move(groups[0]));
    for (auto& thread : threads) thread.join();
    end = Clock::now();
  });
  if (error) std::rethrow_exception(error);
  return py::make_tuple(completed.load(), std::chrono::duration<double>(end - start).count(), failedStatus,
                        failedMessage);
}

const char* kSetDoc = R"doc(
numActivations copies of a program on a device, each with setSize InferenceHandles (seed 001).

InferenceSet(context, qpc, device, setSize, numActivations, properties=None) activates the
program (InferenceSet.Factory takes the same arguments). Flow: getAvailable() -> handle.setBuffers([...])
-> submit(handle, requestId) -> getCompletedId(requestId) or waitForCompletion(handle) ->
putCompleted(handle); or submit(handle, notifyFn, userData) and notifyFn(handle, userData) is
called on a runtime thread when the inference completes (also when it fails: see
handle.getStatus()).

Every blocking call releases the GIL, so several Python threads can share one set. Waits
return a QStatus (QS_TIMEDOUT when their time runs out; timeoutUs 0 waits until done); misuse
and bad buffers raise qaicrt.Error (InvalidArgumentError for QS_INVAL, QS_BUFFER_SIZE,
QS_BUFFER_DIMS) whose message names the buffer. Deleting the set waits for its inferences in
flight (bounded by the data-path timeout) and cancels the rest.
)doc";

const char* kHandleDoc = R"doc(
The buffers and outcome of one inference of an InferenceSet (seed 001's InferenceHandle),
obtained from getAvailable and given back with putCompleted.

Buffers are indexed like Qpc.getBufferMappings() (inputs and outputs together); setBuffers
takes QBuffer objects or any C-contiguous buffer-protocol objects (numpy arrays...), which it
wraps in QBuffers without copying and keeps until they are replaced: outputs are written into
those arrays in place. An output must be writable memory.
)doc";

}  // namespace

SetState::~SetState() {
  // The runtime's set first (it waits for inferences in flight, without the GIL), then the
  // buffers it may have been using.
  std::vector<SharedQBuffer> buffers;
  for (auto& [handle, list] : owners)
    for (auto& buffer : list)
      if (buffer) buffers.push_back(std::move(buffer));
  owners.clear();
  releaseSafely([set = std::move(set), buffers = std::move(buffers)]() mutable {
    withoutGil([&] { set.reset(); });
    dropWithGil(buffers);
  });
}

void bindInferenceSet(py::module_& m) {
  py::class_<rt::PerfCounter> counter(m, "PerfCounter",
                                      "One pipeline stage of one inference (seed 002): wall-clock and CPU time in "
                                      "microseconds, the execution index (0 for every stage, as the seed gives it) "
                                      "and whether the stage ran.");
  py::enum_<rt::PerfCounter::Status>(counter, "Status")
      .value("NOT_RUN", rt::PerfCounter::NOT_RUN)
      .value("EXECUTED", rt::PerfCounter::EXECUTED)
      .export_values();
  counter.def_readonly("realTimeUs", &rt::PerfCounter::realTimeUs, "Wall-clock microseconds of the stage.")
      .def_readonly("cpuUs", &rt::PerfCounter::cpuUs,
                    "CPU microseconds this process spent in the stage (0 while it only waits).")
      .def_readonly("executionIndex", &rt::PerfCounter::executionIndex, "0 for every stage, as seed 002 gives it.")
      .def_readonly("status", &rt::PerfCounter::status, "EXECUTED, or NOT_RUN when the inference skipped the stage.")
      .def("__repr__", [](const rt::PerfCounter& c) {
        return "PerfCounter(realTimeUs=" + std::to_string(c.realTimeUs) + ", cpuUs=" + std::to_string(c.cpuUs) +
               ", executionIndex=" + std::to_string(c.executionIndex) +
               ", status=" + (c.status == rt::PerfCounter::EXECUTED ? "EXECUTED" : "NOT_RUN") + ")";
      });

  py::class_<rt::ProgramProperties>(m, "ProgramProperties")
      .def(py::init<>())
      .def_readwrite("dataPathTimeoutMs", &rt::ProgramProperties::dataPathTimeoutMs,
                     "How long one inference may take on the device before it is retried (0: 5000).")
      .def_readwrite("submitNumRetries", &rt::ProgramProperties::submitNumRetries)
      .def_readwrite("devMapping", &rt::ProgramProperties::devMapping,
                     "Devices the activations are placed on, round robin.");
  py::class_<rt::QueueProperties>(m, "QueueProperties")
      .def(py::init<>())
      .def_readwrite("numThreadsPerQueue", &rt::QueueProperties::numThreadsPerQueue);
  py::class_<PyInferenceSetProperties>(m, "InferenceSetProperties")
      .def(py::init<>())
      .def_readwrite("programProperties", &PyInferenceSetProperties::programProperties)
      .def_readwrite("queueProperties", &PyInferenceSetProperties::queueProperties)
      .def_readwrite("inferenceSetGroup", &PyInferenceSetProperties::inferenceSetGroup,
                     "An InferenceSetGroup shared with other sets (over-subscription), or None.")
      .def_readwrite("name", &PyInferenceSetProperties::name)
      .def_readwrite("id", &PyInferenceSetProperties::id);

  py::class_<PyHandle>(m, "InferenceHandle", kHandleDoc)
      .def(
          "setBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::All); }, py::arg("buffers"),
          "One buffer per BufferMapping, in mapping order.")
      .def(
          "setInputBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::Inputs); },
          py::arg("inputs"), "The inputs only, in mapping order.")
      .def(
          "setOutputBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::Outputs); },
          py::arg("outputs"), "The outputs only, in mapping order.")
      .def(
          "getBuffers", [](const PyHandle& h) { return buffersOf(h, Which::All); },
          "The QBuffers set (None where none was).")
      .def("getInputBuffers", [](const PyHandle& h) { return buffersOf(h, Which::Inputs); })
      .def("getOutputBuffers", [](const PyHandle& h) { return buffersOf(h, Which::Outputs); })
      .def(
          "setBufferDims",
          [](PyHandle& h, uint32_t index, const py::object& dims) {
            const auto actual = dimsOf(dims, "setBufferDims: dims");
            withoutGil([&] { h.handle->setBufferDims(index, actual); });
          },
          py::arg("bufferIndex"), py::arg("dims"),
          "Actual dims of a partial or specialized buffer (checked at submit).")
      .def(
          "setBufferSkipped",
          [](PyHandle& h, uint32_t index, bool skipped) {
            withoutGil([&] { h.handle->setBufferSkipped(index, skipped); });
          },
          py::arg("bufferIndex"), py::arg("skipped") = true,
          "Selective IO: leave the buffer out of the next submissions.")
      .def(
          "getOutputDims",
          [](const PyHandle& h, uint32_t index) { return withoutGil([&] { return h.handle->getOutputDims(index); }); },
          py::arg("bufferIndex"), "Dims of an output after completion.")
      .def("getId", &requestIdOf, "The requestId of the last submit().")
      .def(
          "getActivationIndex", [](const PyHandle& h) { return h.handle->getActivationIndex(); },
          "The activation the handle runs on (index / setSize).")
      .def(
          "getStatus", [](const PyHandle& h) { return withoutGil([&] { return h.handle->getStatus(); }); },
          "The outcome of the last completed inference.")
      .def(
          "getErrorMessage", [](const PyHandle& h) { return withoutGil([&] { return h.handle->getErrorMessage(); }); },
          "Empty on success.")
      .def(
          "getPerformanceCounts",
          [](const PyHandle& h) { return withoutGil([&] { return h.handle->getPerformanceCounts(); }); },
          "Stage name -> PerfCounter for the last completed inference ('0. queue wait' ... "
          "'5. output postprocessing').")
      .def("__eq__", [](const PyHandle& a, const PyHandle& b) { return a.handle == b.handle; })
      .def("__hash__", [](const PyHandle& h) { return std::hash<const void*>()(h.handle.get()); })
      .def("__repr__", [](const PyHandle& h) { return "InferenceHandle(id=" + std::to_string(requestIdOf(h)) + ")"; });

  py::class_<SetState, std::shared_ptr<SetState>>(m, "InferenceSet", kSetDoc)
      .def(py::init(&makeSet), py::arg("context"), py::arg("qpc"), py::arg("device"), py::arg("setSize"),
           py::arg("numActivations"), py::arg("properties") = nullptr)
      .def_static("Factory", &makeSet, py::arg("context"), py::arg("qpc"), py::arg("device"), py::arg("setSize"),
                  py::arg("numActivations"), py::arg("properties") = nullptr)
      .def(
          "getAvailable",
          [](const std::shared_ptr<SetState>& s, uint64_t timeoutUs) {
            return waitForHandle(
                s, [&](rt::shInferenceHandle& handle) { return s->set->getAvailable(handle, timeoutUs); });
          },
          py::arg("timeoutUs") = 0, "Blocks until a handle is free: (QS_SUCCESS, handle), or (QS_TIMEDOUT, None).")
      .def(
          "getAvailableOnActivation",
          [](const std::shared_ptr<SetState>& s, uint32_t activation, uint64_t timeoutUs) {
            return waitForHandle(s, [&](rt::shInferenceHandle& handle) {
              return s->set->getAvailableOnActivation(activation, handle, timeoutUs);
            });
          },
          py::arg("activation"), py::arg("timeoutUs") = 0,
          "getAvailable for a handle of one activation (keeps a sequence on the activation holding its state).")
      .def(
          "resetRetainedState",
          [](const std::shared_ptr<SetState>& s, uint32_t activation) {
            withoutGil([&] { s->set->resetRetainedState(activation); });
          },
          py::arg("activation"), "The next inference submitted on the activation starts from zeroed retained state.")
      .def(
          "submit",
          [](const std::shared_ptr<SetState>& s, PyHandle& h, uint64_t requestId) {
            withoutGil([&] { s->set->submit(h.handle, requestId); });
          },
          py::arg("handle"), py::arg("requestId"),
          "Validates the handle's buffers (raising, naming the buffer) and queues the inference.")
      .def("submit", &submitWithCallback, py::arg("handle"), py::arg("notifyFn"), py::arg("userData") = py::none(),
           "notifyFn(handle, userData) is called on a runtime thread when the inference completes.")
      .def(
          "submit",
          [](const std::shared_ptr<SetState>& s, const py::object& vector, uint64_t requestId) {
            if (!py::hasattr(vector, "getVector"))
              throw py::type_error("InferenceSet.submit: expected an InferenceHandle or an InferenceVector");
            const py::object buffers = vector.attr("getVector")();
            rt::shInferenceHandle handle;
            withoutGil([&] { s->set->getAvailable(handle, 0); });
            if (!handle) raiseStatus(rt::QS_CANCELED, "InferenceSet.submit: the set is shutting down");
            PyHandle h{s, handle};
            try {
              setBuffers(h, buffers.cast<py::sequence>(), Which::All);
              withoutGil([&] { s->set->submit(handle, requestId); });
            } catch (...) {
              withoutGil([&] { s->set->putCompleted(handle); });
              throw;
            }
          },
          py::arg("vector"), py::arg("requestId"),
          "The vendor's form: takes a free handle, sets the InferenceVector's buffers on it and submits it; "
          "getCompletedId(requestId) gives the handle (put it back with putCompleted).")
      .def(
          "getCompletedId",
          [](const std::shared_ptr<SetState>& s, uint64_t requestId, uint64_t timeoutUs) {
            return waitForHandle(
                s, [&](rt::shInferenceHandle& handle) { return s->set->getCompletedId(handle, requestId, timeoutUs); });
          },
          py::arg("requestId"), py::arg("timeoutUs") = 0,
          "Waits for the inference submitted with requestId: (its status, handle), or (QS_TIMEDOUT, None).")
      .def(
          "putCompleted",
          [](const std::shared_ptr<SetState>& s, PyHandle& h) { withoutGil([&] { s->set->putCompleted(h.handle); }); },
          py::arg("handle"), "Gives an acquired or completed handle back.")
      .def(
          "waitForCompletion",
          [](const std::shared_ptr<SetState>& s, PyHandle& h, uint64_t timeoutUs) {
            return withoutGil([&] { return s->set->waitForCompletion(h.handle, timeoutUs); });
          },
          py::arg("handle"), py::arg("timeoutUs") = 0, "Waits for this handle's inference; returns its status.")
      .def(
          "waitForCompletion",
          [](const std::shared_ptr<SetState>& s, uint64_t timeoutUs) {
            return withoutGil([&] { return s->set->waitForCompletion(timeoutUs); });
          },
          py::arg("timeoutUs") = 0,
          "Waits until nothing is in flight in the whole set; completed results the application has not "
          "retrieved (getCompletedId, waitForCompletion(handle)) are discarded and their handles return to "
          "the available pool (seed 001).")
      .def(
          "allocateDmaBuffer",
          [](const std::shared_ptr<SetState>& s, std::size_t size) {
            auto d = std::make_unique<PyDma>();
            withoutGil([&] { d->dma = s->set->allocateDmaBuffer(size); });
            return d;
          },
          py::arg("size"), "A DmaBuffer on this set's device.")
      .def("_runSync", &runSync, py::arg("buffers"), py::arg("requestId"), py::arg("dims"), py::arg("skipped"),
           py::arg("outputDims") = false, py::arg("performanceCounts") = false, py::arg("activation") = py::none(),
           "qaic.Session.run's one-call round trip (not seed 001's API), on any activation or the one given: "
           "(status, message, output dims, counts).")
      .def("_keepBusy", &keepBusy, py::arg("handles"), py::arg("firstRequestId"), py::arg("count"), py::arg("seconds"),
           "qaic.Session.run_benchmark's loop (not seed 001's API): (completed, seconds, status, message).")
      .def("getName", [](const SetState& s) { return s.set->getName(); })
      .def("getId", [](const SetState& s) { return s.set->getId(); })
      .def("getNumActivations", [](const SetState& s) { return s.set->getNumActivations(); })
      .def("getSetSize", [](const SetState& s) { return s.set->getSetSize(); });
}

}  // namespace qaicrt
