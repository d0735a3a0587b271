// SPDX-License-Identifier: Apache-2.0
// The vendor's ExecObj: one inference slot of an active Program (VendorApi.hpp). Buffers and dims
// are given by binding index of the vendor IO descriptor; size 0 skips a binding; outputs get
// memory of the ExecObj's own unless the caller's buffer is writable and large enough.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <optional>

#include "VendorApi.hpp"

namespace qaicrt {
namespace {

// Each ExecObj holds its slot for its whole life: a free one is there at once or not at all, so
// the runtime's wait is as short as it allows (0 would wait until one is given back).
constexpr uint64_t kSlotWaitUs = 1;

std::string bindingName(const rt::VendorIoBinding& b) {
  return "binding '" + b.name + "' (index " + std::to_string(b.index) + ")";
}

struct PyExecObj {
  enum class Slot { Acquired, Submitted, Completed };
  std::shared_ptr<rt::Qpc> qpc;
  std::shared_ptr<Activation> activation;
  rt::shInferenceHandle handle;
  Slot slot = Slot::Acquired;
  // By binding: what the caller gave (null: nothing, which skips it) and the dims it named.
  std::vector<SharedQBuffer> given;
  std::vector<std::optional<std::vector<uint64_t>>> dims;
  bool hasData = false;
  // By buffer mapping: where the runtime writes each output, and whether the caller wants it.
  std::vector<py::object> outputMemory;
  std::vector<bool> wanted;
  std::vector<SharedQBuffer> inFlight;  // what the handle points at
  std::vector<std::vector<uint64_t>> producedDims;
  rt::QStatus deferred = rt::QS_SUCCESS;  // a refusal waitForCompletion reports, as the vendor does
  std::string deferredMessage;
  rt::QStatus lastStatus = rt::QS_SUCCESS;
  bool hasResult = false;
  std::string lastError;
  uint64_t nextRequestId = 1;

  const std::vector<rt::VendorIoBinding>& bindings() const { return qpc->getVendorIoBindings(); }
  ~PyExecObj();
};

PyExecObj::~PyExecObj() {
  if (!handle || !activation) return;
  withoutGil([&] {
    try {
      if (slot == Slot::Submitted) activation->set->waitForCompletion(handle, 0);
      activation->set->putCompleted(handle);
    } catch (const rt::Error&) {
      // The set is shutting down with the handle: nothing is left to give back.
    }
  });
}

std::unique_ptr<PyExecObj> makeExecObj(PyContext&, PyProgram& program) {
  if (!program.activation)
    raiseStatus(rt::QS_WRONG_STATE, "ExecObj: the program is not active (call Program.activate() first)");
  auto e = std::make_unique<PyExecObj>();
  e->qpc = program.qpc;
  e->activation = program.activation;
  const rt::QStatus status = withoutGil(
      [&] { return e->activation->set->getAvailableOnActivation(0, e->handle, kSlotWaitUs); });
  if (status != rt::QS_SUCCESS || !e->handle)
    raiseStatus(rt::QS_NO_RESOURCES, "ExecObj: all " + std::to_string(kExecSlots) +
                                         " inference slots of the program are held by other ExecObjs");
  const auto& bindings = e->bindings();
  e->given.resize(bindings.size());
  e->dims.resize(bindings.size());
  const std::size_t mappings = e->qpc->getBufferMappings().size();
  e->outputMemory.resize(mappings);
  e->wanted.assign(mappings, false);
  e->producedDims.resize(mappings);
  return e;
}

// (element size, dims) -> dims.
std::vector<uint64_t> dimsOfPair(const py::handle& pair, const std::string& what) {
  const auto items = itemsOf(pair, what);
  if (items.size() != 2) throw py::type_error(what + ": expected (element size, dims)");
  return dimsOf(items[1], what + "[1]");
}

rt::QStatus setData(PyExecObj& e, const py::object& buffers, const py::object& dimsArgument) {
  if (e.slot == PyExecObj::Slot::Submitted)
    return reportFailure(e.lastError, rt::QS_WRONG_STATE, "ExecObj.setData: an inference is in flight");
  const auto& bindings = e.bindings();
  std::vector<SharedQBuffer> given(bindings.size());
  std::vector<std::optional<std::vector<uint64_t>>> dims(bindings.size());
  const auto items = itemsOf(buffers, "ExecObj.setData: buffers");
  if (dimsArgument.is_none()) {
    // The vendor's other form: (binding index, buffer) pairs for the bindings to set.
    given = e.given;
    dims = e.dims;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const auto pair = itemsOf(items[k], "ExecObj.setData: item " + std::to_string(k));
      if (pair.size() != 2)
        throw py::type_error("ExecObj.setData: item " + std::to_string(k) + ": expected (index, buffer)");
      const auto index = unsignedOf(pair[0], "ExecObj.setData: item " + std::to_string(k) + " index",
                                    bindings.empty() ? 0 : bindings.size() - 1);
      if (bindings.empty()) raiseStatus(rt::QS_INVAL, "ExecObj.setData: the program has no binding");
      given[index] = py::isinstance<PyQBuffer>(pair[1])
                         ? pair[1].cast<SharedQBuffer>()
                         : std::make_shared<PyQBuffer>(pair[1], bindingName(bindings[index]));
      if (py::hasattr(pair[1], "shape")) {
        auto shape = dimsOf(pair[1].attr("shape"), bindingName(bindings[index]) + " shape");
        if (shape.empty()) shape.push_back(1);
        dims[index] = std::move(shape);
      } else {
        dims[index].reset();
      }
    }
  } else {
    const auto dimsItems = itemsOf(dimsArgument, "ExecObj.setData: dims");
    if (items.size() != bindings.size() || dimsItems.size() != bindings.size())
      return reportFailure(e.lastError, rt::QS_INVAL,
                           "ExecObj.setData: expected " + std::to_string(bindings.size()) +
                               " buffers and dims (one per binding of the IO descriptor), got " +
                               std::to_string(items.size()) + " buffers and " + std::to_string(dimsItems.size()) +
                               " dims");
    for (std::size_t i = 0; i < bindings.size(); ++i) {
      given[i] = py::isinstance<PyQBuffer>(items[i]) ? items[i].cast<SharedQBuffer>()
                                                     : std::make_shared<PyQBuffer>(items[i], bindingName(bindings[i]));
      dims[i] = dimsOfPair(dimsItems[i], "ExecObj.setData: dims[" + std::to_string(i) + "]");
    }
  }
  for (std::size_t i = 0; i < bindings.size(); ++i)
    if (bindings[i].retained && given[i] && given[i]->qbuffer().size != 0)
      return reportFailure(e.lastError, rt::QS_INVAL,
                           "ExecObj.setData: " + bindingName(bindings[i]) +
                               " is retained state, which stays on the device: pass a size-0 buffer to skip it");
  e.given = std::move(given);
  e.dims = std::move(dims);
  e.hasData = true;
  e.deferred = rt::QS_SUCCESS;
  return rt::QS_SUCCESS;
}

rt::QStatus enqueue(PyExecObj& e) {
  if (!e.activation->live)
    return reportFailure(e.lastError, rt::QS_WRONG_STATE, "ExecObj.enqueue: the program was deactivated");
  if (e.slot == PyExecObj::Slot::Submitted)
    return reportFailure(e.lastError, rt::QS_WRONG_STATE, "ExecObj.enqueue: an inference is already in flight");
  if (!e.hasData) return reportFailure(e.lastError, rt::QS_INVAL, "ExecObj.enqueue: no data (call setData first)");
  const auto& set = e.activation->set;
  if (e.slot == PyExecObj::Slot::Completed || !e.handle) {
    // A completed handle takes new buffers only once given back and acquired again; a slot lost
    // to another ExecObj at that moment is tried for again at the next enqueue.
    const rt::QStatus status = withoutGil([&] {
      if (e.handle) set->putCompleted(e.handle);
      e.handle.reset();
      return set->getAvailableOnActivation(0, e.handle, kSlotWaitUs);
    });
    if (status != rt::QS_SUCCESS || !e.handle) {
      e.handle.reset();
      return reportFailure(e.lastError, status == rt::QS_SUCCESS ? rt::QS_NO_RESOURCES : status,
                           "ExecObj.enqueue: no inference slot became free");
    }
    e.slot = PyExecObj::Slot::Acquired;
  }
  const auto& mappings = e.qpc->getBufferMappingsV2();
  std::vector<rt::QBuffer> buffers(mappings.size());
  std::vector<bool> skipped(mappings.size(), false);
  std::vector<std::optional<std::vector<uint64_t>>> inputDims(mappings.size());
  std::vector<SharedQBuffer> inFlight;
  for (const auto& b : e.bindings()) {
    if (b.retained) continue;
    const auto m = static_cast<std::size_t>(b.mappingIndex);
    const SharedQBuffer& given = e.given[b.index];
    const bool empty = !given || given->qbuffer().size == 0;
    if (b.ioType == rt::BUFFER_IO_TYPE_INPUT) {
      if (empty) {
        skipped[m] = true;  // neither validation nor the pipeline reads a skipped buffer
      } else {
        buffers[m] = given->qbuffer();
        inFlight.push_back(given);
        inputDims[m] = e.dims[b.index];
      }
      continue;
    }
    e.wanted[m] = !empty;
    skipped[m] = empty && mappings[m].allowSkip;
    if (skipped[m]) continue;
    SharedQBuffer memory;
    if (!empty && given->writable() && given->qbuffer().type == rt::QBUFFER_TYPE_HEAP &&
        given->qbuffer().size >= mappings[m].size) {
      memory = given;  // written in place
    } else {
      memory = std::make_shared<PyQBuffer>(py::array_t<uint8_t>(static_cast<py::ssize_t>(mappings[m].size)));
    }
    e.outputMemory[m] = memory->owner();
    buffers[m] = memory->qbuffer();
    inFlight.push_back(std::move(memory));
  }
  std::string failure;
  const uint64_t requestId = e.nextRequestId++;
  const rt::QStatus status = withoutGil([&] {
    try {
      e.handle->setBuffers(buffers);
      for (std::size_t m = 0; m < mappings.size(); ++m) {
        e.handle->setBufferSkipped(static_cast<uint32_t>(m), skipped[m]);
        if (inputDims[m]) e.handle->setBufferDims(static_cast<uint32_t>(m), *inputDims[m]);
      }
      set->submit(e.handle, requestId);
      return rt::QS_SUCCESS;
    } catch (const rt::Error& error) {
      failure = error.what();
      return error.status();
    }
  });
  if (status == rt::QS_BUFFER_DIMS) {
    // The vendor's runtime finds no specialization for these dims when the inference runs, and
    // says so when it is waited for; the slot stays usable.
    e.deferred = status;
    e.deferredMessage = failure;
    return rt::QS_SUCCESS;
  }
  if (status != rt::QS_SUCCESS) return reportFailure(e.lastError, status, "ExecObj.enqueue: " + failure);
  e.inFlight = std::move(inFlight);
  e.slot = PyExecObj::Slot::Submitted;
  return rt::QS_SUCCESS;
}

rt::QStatus waitForCompletion(PyExecObj& e) {
  e.hasResult = false;
  if (e.deferred != rt::QS_SUCCESS) {
    const rt::QStatus status = e.deferred;
    e.deferred = rt::QS_SUCCESS;
    e.lastStatus = status;
    return reportFailure(e.lastError, status, "No matching dimension found: " + e.deferredMessage);
  }
  if (e.slot != PyExecObj::Slot::Submitted)
    return reportFailure(e.lastError, rt::QS_WRONG_STATE, "ExecObj.waitForCompletion: nothing was enqueued");
  const auto& mappings = e.qpc->getBufferMappings();
  std::string message;
  const rt::QStatus status = withoutGil([&] {
    // Without a timeout the wait ends only with the inference (its own status, QS_TIMEDOUT when
    // its retries ran out) or with the set's shutdown (QS_CANCELED).
    const rt::QStatus s = e.activation->set->waitForCompletion(e.handle, 0);
    for (std::size_t m = 0; m < mappings.size(); ++m)
      if (mappings[m].ioType == rt::BUFFER_IO_TYPE_OUTPUT)
        e.producedDims[m] = e.handle->getOutputDims(static_cast<uint32_t>(m));
    if (s != rt::QS_SUCCESS) message = e.handle->getErrorMessage();
    return s;
  });
  e.slot = PyExecObj::Slot::Completed;
  e.lastStatus = status;
  e.hasResult = status == rt::QS_SUCCESS;
  if (status != rt::QS_SUCCESS) return reportFailure(e.lastError, status, "ExecObj: " + message);
  return status;
}

SharedQBuffer emptyBuffer() { return std::make_shared<PyQBuffer>(py::bytes()); }

py::tuple getData(PyExecObj& e) {
  const auto& v2 = e.qpc->getBufferMappingsV2();
  py::list result;
  for (const auto& b : e.bindings()) {
    const SharedQBuffer& given = e.given[b.index];
    if (b.retained) {
      result.append(emptyBuffer());
    } else if (b.ioType == rt::BUFFER_IO_TYPE_INPUT) {
      result.append(given ? given : emptyBuffer());
    } else {
      const auto m = static_cast<std::size_t>(b.mappingIndex);
      if (!e.hasResult || !e.wanted[m] || !e.outputMemory[m]) {
        result.append(emptyBuffer());
        continue;
      }
      // The produced output at the dims of the specialization that ran.
      const uint64_t bytes = std::min<uint64_t>(rt::dimsProduct(e.producedDims[m]) * rt::shapeRules(v2[m]).elementSize,
                                                v2[m].size);
      py::object view =
          py::memoryview(e.outputMemory[m]).attr("cast")("B")[py::slice(0, static_cast<py::ssize_t>(bytes), 1)];
      result.append(std::make_shared<PyQBuffer>(view));
    }
  }
  return py::make_tuple(
      e.hasResult ? rt::QS_SUCCESS : (e.lastStatus == rt::QS_SUCCESS ? rt::QS_WRONG_STATE : e.lastStatus), result);
}

PyExecObj& execObjOf(const py::object& object) { return object.cast<PyExecObj&>(); }

const char* kExecObjDoc = R"doc(
The vendor's ExecObj: one inference slot of an active Program. ExecObj(context, program).

setData(buffers, dims) -> QStatus: one QBuffer (or buffer object) and one (element size, dims)
pair (a BufferDimensionsVecRef) per binding of Qpc.getIoDescriptor(), by binding index. A size-0
buffer skips its binding (retained-state bindings must be skipped: they stay on the device);
the inputs' dims select the specialization; an output's buffer only announces it: the ExecObj
gives the runtime output memory of its own (or writes in place into a writable buffer that is
large enough). setData([(index, array), ...]) sets only the bindings named.
Queue.enqueue(execObj) submits; waitForCompletion() -> QStatus (dims that select no
specialization: "No matching dimension found" on stderr and QS_BUFFER_DIMS; the slot stays
usable); getData() -> (QStatus, [QBuffer by binding index]): outputs hold prod(dims) x element
size bytes at the dims that ran, inputs are what was given, skipped bindings are empty.
)doc";

}  // namespace

rt::QStatus enqueueExecObj(const py::object& execObj) { return enqueue(execObjOf(execObj)); }

void bindExecObj(py::module_& m) {
  py::class_<PyExecObj>(m, "ExecObj", kExecObjDoc)
      .def(py::init(&makeExecObj), py::arg("context"), py::arg("program"))
      .def("setData", &setData, py::arg("buffers"), py::arg("dims") = py::none())
      .def("enqueue", &enqueue, "Submits the inference (Queue.enqueue does the same).")
      .def("waitForCompletion", &waitForCompletion)
      .def("getData", &getData)
      .def(
          "run",
          [](PyExecObj& e, const py::object& buffers) {
            py::list dims;
            for (const auto& b : e.bindings()) dims.append(py::make_tuple(0, b.dims));
            rt::QStatus status = setData(e, buffers, dims);
            if (status == rt::QS_SUCCESS) status = enqueue(e);
            if (status == rt::QS_SUCCESS) status = waitForCompletion(e);
            return status;
          },
          py::arg("buffers"), "setData at full dims, enqueue and waitForCompletion in one call.")
      .def(
          "getErrorMessage", [](const PyExecObj& e) { return e.lastError; }, "Why the last failed call failed.");
}

}  // namespace qaicrt
