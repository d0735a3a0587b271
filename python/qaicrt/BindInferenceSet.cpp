// InferenceSet, InferenceHandle and their properties (seed 001). Waits return the QStatus the C++
// API returns (with the handle, as a tuple, where C++ fills one in); misuse raises qaicrt.Error.
#include <pybind11/stl.h>

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
  uint64_t id = 0;
  withoutGil([&] { id = h.handle->getId(); });
  return id;
}

py::object handleObject(const std::shared_ptr<SetState>& state, rt::shInferenceHandle handle) {
  if (!handle) return py::none();
  return py::cast(PyHandle{state, std::move(handle)});
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

void setBuffers(PyHandle& h, const py::sequence& items, Which which) {
  BufferList list = toBufferList(items);
  const auto indices = indicesOf(*h.state, which);
  // The runtime checks the count; outputs must be writable memory, which only Python knows.
  for (std::size_t k = 0; k < list.owners.size() && k < indices.size(); ++k) {
    const auto i = indices[k];
    const PyQBuffer& buffer = *list.owners[k];
    if (!h.state->isInput[i] && !buffer.writable())
      raiseStatus(rt::QS_INVAL, "buffer '" + h.state->names[i] + "' (index " + std::to_string(i) +
                                    ") is an output, but its QBuffer is read-only (" + buffer.describe() + ")");
  }
  withoutGil([&] {
    if (which == Which::All) h.handle->setBuffers(list.buffers);
    else if (which == Which::Inputs) h.handle->setInputBuffers(list.buffers);
    else h.handle->setOutputBuffers(list.buffers);
  });
  auto& owners = h.state->owners[h.handle.get()];
  owners.resize(h.state->isInput.size());
  for (std::size_t k = 0; k < indices.size(); ++k) owners[indices[k]] = std::move(list.owners[k]);
}

py::list buffersOf(const PyHandle& h, Which which) {
  py::list result;
  auto it = h.state->owners.find(h.handle.get());
  for (auto i : indicesOf(*h.state, which)) {
    if (it != h.state->owners.end() && it->second[i]) result.append(py::cast(it->second[i]));
    else result.append(py::none());
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
  py::class_<rt::PerfCounter>(m, "PerfCounter", "Microseconds one pipeline stage took (seed 002).")
      .def_readonly("realTimeUs", &rt::PerfCounter::realTimeUs)
      .def_readonly("executionIndex", &rt::PerfCounter::executionIndex, "The stage's position in the pipeline.")
      .def("__repr__", [](const rt::PerfCounter& c) {
        return "PerfCounter(realTimeUs=" + std::to_string(c.realTimeUs) + ", executionIndex=" +
               std::to_string(c.executionIndex) + ")";
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
      .def("setBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::All); }, py::arg("buffers"),
           "One buffer per BufferMapping, in mapping order.")
      .def("setInputBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::Inputs); },
           py::arg("inputs"), "The inputs only, in mapping order.")
      .def("setOutputBuffers", [](PyHandle& h, const py::sequence& b) { setBuffers(h, b, Which::Outputs); },
           py::arg("outputs"), "The outputs only, in mapping order.")
      .def("getBuffers", [](const PyHandle& h) { return buffersOf(h, Which::All); }, "The QBuffers set (None where none was).")
      .def("getInputBuffers", [](const PyHandle& h) { return buffersOf(h, Which::Inputs); })
      .def("getOutputBuffers", [](const PyHandle& h) { return buffersOf(h, Which::Outputs); })
      .def("setBufferDims",
           [](PyHandle& h, uint32_t index, const std::vector<uint64_t>& dims) {
             withoutGil([&] { h.handle->setBufferDims(index, dims); });
           },
           py::arg("bufferIndex"), py::arg("dims"), "Actual dims of a partial or specialized buffer (checked at submit).")
      .def("setBufferSkipped",
           [](PyHandle& h, uint32_t index, bool skipped) { withoutGil([&] { h.handle->setBufferSkipped(index, skipped); }); },
           py::arg("bufferIndex"), py::arg("skipped") = true, "Selective IO: leave the buffer out of the next submissions.")
      .def("getOutputDims",
           [](const PyHandle& h, uint32_t index) {
             std::vector<uint64_t> dims;
             withoutGil([&] { dims = h.handle->getOutputDims(index); });
             return dims;
           },
           py::arg("bufferIndex"), "Dims of an output after completion.")
      .def("getId", &requestIdOf, "The requestId of the last submit().")
      .def("getStatus",
           [](const PyHandle& h) {
             rt::QStatus status;
             withoutGil([&] { status = h.handle->getStatus(); });
             return status;
           },
           "The outcome of the last completed inference.")
      .def("getErrorMessage",
           [](const PyHandle& h) {
             std::string message;
             withoutGil([&] { message = h.handle->getErrorMessage(); });
             return message;
           },
           "Empty on success.")
      .def("getPerformanceCounts",
           [](const PyHandle& h) {
             std::map<std::string, rt::PerfCounter> counts;
             withoutGil([&] { counts = h.handle->getPerformanceCounts(); });
             return counts;
           },
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
            rt::shInferenceHandle handle;
            rt::QStatus status;
            withoutGil([&] { status = s->set->getAvailable(handle, timeoutUs); });
            return py::make_tuple(status, handleObject(s, std::move(handle)));
          },
          py::arg("timeoutUs") = 0,
          "Blocks until a handle is free: (QS_SUCCESS, handle), or (QS_TIMEDOUT, None).")
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
          "getCompletedId",
          [](const std::shared_ptr<SetState>& s, uint64_t requestId, uint64_t timeoutUs) {
            rt::shInferenceHandle handle;
            rt::QStatus status;
            withoutGil([&] { status = s->set->getCompletedId(handle, requestId, timeoutUs); });
            return py::make_tuple(status, handleObject(s, std::move(handle)));
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
            rt::QStatus status;
            withoutGil([&] { status = s->set->waitForCompletion(h.handle, timeoutUs); });
            return status;
          },
          py::arg("handle"), py::arg("timeoutUs") = 0, "Waits for this handle's inference; returns its status.")
      .def(
          "waitForCompletion",
          [](const std::shared_ptr<SetState>& s, uint64_t timeoutUs) {
            rt::QStatus status;
            withoutGil([&] { status = s->set->waitForCompletion(timeoutUs); });
            return status;
          },
          py::arg("timeoutUs") = 0, "Waits until nothing is in flight in the whole set.")
      .def(
          "allocateDmaBuffer",
          [](const std::shared_ptr<SetState>& s, std::size_t size) {
            auto d = std::make_unique<PyDma>();
            withoutGil([&] { d->dma = s->set->allocateDmaBuffer(size); });
            return d;
          },
          py::arg("size"), "A DmaBuffer on this set's device.")
      .def("getName", [](const SetState& s) { return s.set->getName(); })
      .def("getId", [](const SetState& s) { return s.set->getId(); })
      .def("getNumActivations", [](const SetState& s) { return s.set->getNumActivations(); })
      .def("getSetSize", [](const SetState& s) { return s.set->getSetSize(); });
}

}  // namespace qaicrt
