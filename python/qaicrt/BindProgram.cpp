// SPDX-License-Identifier: Apache-2.0
// The vendor's Program, Queue, QAicProgramProperties, QIDList and BufferDimensionsVecRef
// (VendorApi.hpp says how they sit on InferenceSet).
#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include <charconv>
#include <cstdio>
#include <optional>

#include "VendorApi.hpp"

namespace qaicrt {
namespace {

// "0:1" -> {0, 1}: the vendor's string form of a device mapping.
std::vector<rt::QID> parseDevMapping(const std::string& text) {
  std::vector<rt::QID> devices;
  auto fail = [&](const std::string& why) {
    raiseStatus(rt::QS_INVAL, "QAicProgramProperties.devMapping: '" + text + "' " + why +
                                  " (device ids separated by ':', e.g. \"0:1\")");
  };
  if (text.empty()) return devices;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    rt::QID id = 0;
    const char* first = text.data() + start;
    const char* last = text.data() + end;
    const auto [stop, error] = std::from_chars(first, last, id);
    if (first == last || error != std::errc() || stop != last)
      fail("has '" + std::string(first, last) + "', which is not a device id");
    devices.push_back(id);
    if (end == text.size()) break;
    start = end + 1;
  }
  return devices;
}

std::string devMappingText(const std::vector<rt::QID>& devices) {
  std::string text;
  for (std::size_t i = 0; i < devices.size(); ++i) text += (i ? ":" : "") + std::to_string(devices[i]);
  return text;
}

// The vendor's properties: its field names, over the runtime's ProgramProperties.
struct PyProgramProperties {
  rt::ProgramProperties properties;
  uint32_t submitRetryTimeoutMs = 0;  // as given; it sets the runtime's one timeout per try too
};

bool hasDevice(const rt::Context& context, rt::QID device) {
  for (auto d : context.getDevices())
    if (d == device) return true;
  return false;
}

std::unique_ptr<PyProgram> makeProgram(PyContext& context, std::optional<rt::QID> device, std::shared_ptr<rt::Qpc> qpc,
                                       const PyProgramProperties* properties) {
  if (!qpc) raiseStatus(rt::QS_INVAL, "Program: qpc is None");
  auto program = std::make_unique<PyProgram>();
  program->context = context.context;
  program->qpc = std::move(qpc);
  if (properties != nullptr) program->properties = properties->properties;
  const auto& devices = program->context->getDevices();
  if (device) {
    program->device = *device;
  } else if (!program->properties.devMapping.empty()) {
    program->device = program->properties.devMapping.front();
  } else {
    if (devices.empty()) raiseStatus(rt::QS_NODEV, "Program: the context has no device");
    program->device = devices.front();
  }
  if (!hasDevice(*program->context, program->device))
    raiseStatus(rt::QS_NODEV, "Program: device " + std::to_string(program->device) + " is not a device of the context");
  for (auto d : program->properties.devMapping)
    if (!hasDevice(*program->context, d))
      raiseStatus(rt::QS_NODEV,
                  "Program: devMapping names device " + std::to_string(d) + ", which is not a device of the context");
  return program;
}

rt::QStatus load(PyProgram& p) {
  if (p.qpc->getInfo().program.empty()) return reportFailure(p.lastError, rt::QS_INVAL, "Program.load: no program");
  p.loaded = true;
  return rt::QS_SUCCESS;
}

rt::QStatus activate(PyProgram& p) {
  if (!p.loaded)
    return reportFailure(p.lastError, rt::QS_WRONG_STATE, "Program.activate: the program is not loaded (load() first)");
  if (p.activation) return reportFailure(p.lastError, rt::QS_WRONG_STATE, "Program.activate: already active");
  rt::InferenceSetProperties props;
  props.programProperties = p.properties;
  // A single-device program has one activation, on p.device; the vendor's devMapping lists
  // several cards only to spread a multi-device program's parts over them, so it goes to the
  // runtime then (with none, the context's devices; docs/runtime.md, "Which devices").
  if (p.qpc->getInfo().numDevices < 2) props.programProperties.devMapping.clear();
  props.name = "Program";
  auto activation = std::make_shared<Activation>();
  std::string failure;
  const rt::QStatus status = withoutGil([&] {
    try {
      activation->set = rt::InferenceSet::Factory(p.context, p.qpc, p.device, kExecSlots, 1, &props);
      return rt::QS_SUCCESS;
    } catch (const rt::Error& e) {
      failure = e.what();
      return e.status();
    }
  });
  if (status != rt::QS_SUCCESS) return reportFailure(p.lastError, status, "Program.activate: " + failure);
  registerLiveSet(activation->set);
  p.activation = std::move(activation);
  return rt::QS_SUCCESS;
}

rt::QStatus deactivate(PyProgram& p) {
  if (!p.activation) return reportFailure(p.lastError, rt::QS_WRONG_STATE, "Program.deactivate: not active");
  p.activation->live = false;  // its ExecObjs refuse work from now on
  p.activation.reset();        // the set goes now unless an ExecObj still holds it
  return rt::QS_SUCCESS;
}

// The ExecObj's program has the set that runs it: the queue only names the device, and its
// thread count (the vendor's argument) has nothing to size.
struct PyQueue {
  rt::QID device = 0;
};

// Pure-Python parts: list types the vendor's callers index, compare and assign like lists.
const char* kListTypes = R"py(
import operator as _operator


class QIDList(list):
    """A list of device ids (ints), as the vendor's Context(QIDList) takes them."""

    def __init__(self, ids=()):
        super().__init__(_operator.index(i) for i in ids)

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            super().__setitem__(index, [_operator.index(v) for v in value])
        else:
            super().__setitem__(index, _operator.index(value))

    def append(self, value):
        super().append(_operator.index(value))


def _dims_pair(pair, where):
    try:
        size, dims = pair
        return (_operator.index(size), [_operator.index(d) for d in dims])
    except (TypeError, ValueError) as error:
        raise TypeError(f"BufferDimensionsVecRef{where}: expected (element size, dims), got {pair!r}") from error


class BufferDimensionsVecRef(list):
    """The dims of every binding as (element size, [dims...]) pairs, by binding index: what
    ExecObj.setData takes beside the buffers. v[i] = (itemsize, shape) replaces one; v[i][1] is a
    list."""

    def __init__(self, pairs=()):
        super().__init__(_dims_pair(p, f"[{i}]") for i, p in enumerate(pairs))

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            super().__setitem__(index, [_dims_pair(p, "[slice]") for p in value])
        else:
            super().__setitem__(index, _dims_pair(value, f"[{index}]"))

    def append(self, value):
        super().append(_dims_pair(value, f"[{len(self)}]"))


class InferenceVector:
    """The buffers of one inference, one QBuffer per buffer mapping (zero-filled, writable) in
    mapping order: getVector() is the list itself, so v.getVector()[i] = QBuffer(...) replaces one.
    InferenceSet.submit(vector, requestId) runs it."""

    def __init__(self, bufferMappings):
        self._vector = [QBuffer(bytearray(m.size)) for m in bufferMappings]

    def getVector(self):
        return self._vector
)py";

}  // namespace

Activation::~Activation() {
  releaseSafely([set = std::move(set)]() mutable { withoutGil([&] { set.reset(); }); });
}

rt::QStatus reportFailure(std::string& lastError, rt::QStatus status, const std::string& message) {
  lastError = message;
  std::fprintf(stderr, "[qaicrt] %s: %s\n", rt::statusName(status), message.c_str());
  return status;
}

void bindProgram(py::module_& m) {
  py::exec(kListTypes, m.attr("__dict__"));

  py::class_<PyProgramProperties>(m, "QAicProgramProperties", R"doc(
The vendor's program properties, by its field names: dataPathTimeoutMs (how long one inference
may take before it is retried), SubmitNumRetries / submitNumRetries (retries before it fails),
SubmitRetryTimeoutMs (older callers' name for the same timeout: it sets dataPathTimeoutMs),
devMapping (a string of device ids separated by ':', e.g. "0:1": a multi-device program's parts
go on those devices in order; a single-device program's activation goes on the first). A
malformed devMapping raises InvalidArgumentError naming it.
)doc")
      .def(py::init<>())
      .def_property(
          "dataPathTimeoutMs", [](const PyProgramProperties& p) { return p.properties.dataPathTimeoutMs; },
          [](PyProgramProperties& p, uint32_t v) { p.properties.dataPathTimeoutMs = v; })
      .def_property(
          "SubmitRetryTimeoutMs", [](const PyProgramProperties& p) { return p.submitRetryTimeoutMs; },
          [](PyProgramProperties& p, uint32_t v) {
            p.submitRetryTimeoutMs = v;
            p.properties.dataPathTimeoutMs = v;
          })
      .def_property(
          "SubmitNumRetries", [](const PyProgramProperties& p) { return p.properties.submitNumRetries; },
          [](PyProgramProperties& p, uint32_t v) { p.properties.submitNumRetries = v; })
      .def_property(
          "submitNumRetries", [](const PyProgramProperties& p) { return p.properties.submitNumRetries; },
          [](PyProgramProperties& p, uint32_t v) { p.properties.submitNumRetries = v; })
      .def_property(
          "devMapping", [](const PyProgramProperties& p) { return devMappingText(p.properties.devMapping); },
          [](PyProgramProperties& p, const py::object& value) {
            if (py::isinstance<py::str>(value)) {
              p.properties.devMapping = parseDevMapping(value.cast<std::string>());
            } else {
              std::vector<rt::QID> devices;
              for (const auto& d : dimsOf(value, "QAicProgramProperties.devMapping"))
                devices.push_back(static_cast<rt::QID>(d));
              p.properties.devMapping = std::move(devices);
            }
          },
          "Device ids as \"0:1\" (a list of ints is accepted too).");

  py::class_<PyProgram>(m, "Program", R"doc(
The vendor's Program: a container to activate on a device. Program(context, device, qpc,
properties=None); device None means the first device of devMapping, else of the context.
load() -> QStatus; activate() -> QStatus (one activation: its NSPs and its retained state, zeroed);
deactivate() -> QStatus (releases them once no ExecObj of it is left; a later activate() starts
from zeroed state). Misuse returns QS_WRONG_STATE; the reason goes to stderr and
getErrorMessage(). Deleting the Program releases everything.
)doc")
      .def(py::init(&makeProgram), py::arg("context"), py::arg("device"), py::arg("qpc"),
           py::arg("properties") = nullptr)
      .def("load", &load)
      .def("activate", &activate)
      .def("deactivate", &deactivate)
      .def(
          "isActive", [](const PyProgram& p) { return static_cast<bool>(p.activation); },
          "True between activate() and deactivate().")
      .def(
          "getDevice", [](const PyProgram& p) { return p.device; }, "The device the program activates on.")
      .def(
          "getErrorMessage", [](const PyProgram& p) { return p.lastError; }, "Why the last failed call failed.");

  py::class_<PyQueue>(m, "Queue", R"doc(
The vendor's Queue of a device: Queue(context, device, numThreads=1); enqueue(execObj) submits
the ExecObj's inference and returns a QStatus.
)doc")
      .def(py::init([](PyContext& context, rt::QID device, uint32_t /*numThreads*/) {
             if (!hasDevice(*context.context, device))
               raiseStatus(rt::QS_NODEV, "Queue: device " + std::to_string(device) + " is not a device of the context");
             return PyQueue{device};
           }),
           py::arg("context"), py::arg("device"), py::arg("numThreads") = 1)
      .def(
          "enqueue", [](PyQueue&, const py::object& execObj) { return enqueueExecObj(execObj); }, py::arg("execObj"))
      .def("getDevice", [](const PyQueue& q) { return q.device; });
}

}  // namespace qaicrt
