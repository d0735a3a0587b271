// SPDX-License-Identifier: Apache-2.0
// Context (devices, logging, error handler, DMA buffers), partitions and their resources.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <optional>

#include "Common.hpp"

namespace qaicrt {
namespace {

// QAicContextProperties as Python holds it: the partition by value (the C++ struct points to one).
struct PyContextProperties {
  rt::QLogLevel initialLogLevel = rt::QL_WARN;
  std::optional<rt::ResourceRequest> partition;
};

struct PyPartition {
  std::shared_ptr<const rt::Partition> partition;
  ~PyPartition() {
    withoutGil([&] { partition.reset(); });  // waits for qaicd's answer
  }
};

std::unique_ptr<PyContext> makeContext(const PyContextProperties* properties, const std::vector<rt::QID>& devices,
                                       const py::object& logCallback, const py::object& logUserData,
                                       const py::object& errorHandler, const py::object& errorUserData) {
  rt::QAicContextProperties props;
  if (properties != nullptr) {
    props.initialLogLevel = properties->initialLogLevel;
    if (properties->partition) props.partition = &*properties->partition;
  }
  rt::LogCallback log = rt::defaultLogger;
  if (!logCallback.is_none()) {
    auto function = shareObject(logCallback), data = shareObject(logUserData);
    log = [function, data](rt::QLogLevel level, const char* message, void*) {
      const std::string text = message;
      callPython("qaicrt: Context log callback", [&] { (*function)(level, text, *data); });
    };
  }
  rt::ErrorHandler handler = rt::defaultErrorHandler;
  if (!errorHandler.is_none()) {
    auto function = shareObject(errorHandler), data = shareObject(errorUserData);
    handler = [function, data](rt::QCtxId id, rt::QStatus status, const char* message, void*) {
      const std::string text = message;
      callPython("qaicrt: Context error handler", [&] { (*function)(id, status, text, *data); });
    };
  }
  auto context = std::make_unique<PyContext>();
  withoutGil([&] { context->context = rt::Context::Factory(&props, devices, log, nullptr, handler, nullptr); });
  return context;
}

const char* kContextDoc = R"doc(
The runtime's root object (seed 001's Context): the devices this process uses, its logging and
its error handler.

Context(devices=[], properties=None, logCallback=None, logUserData=None, errorHandler=None,
errorUserData=None); Context.Factory(properties, devices, ...) takes the C++ order. `devices`
empty means every device under $QAIC_ROOT (partitions excluded). A missing device raises
qaicrt.Error with status QS_NODEV naming the node.

logCallback(level: QLogLevel, message: str, userData) and errorHandler(contextId: int,
status: QStatus, message: str, userData) are called on the runtime's threads with the GIL
taken; an exception they raise is reported through sys.unraisablehook. Without them the
runtime writes to stderr.
)doc";

}  // namespace

PyContext::~PyContext() {
  withoutGil([&] { context.reset(); });
}

void bindContext(py::module_& m) {
  py::class_<rt::ResourceRequest>(m, "ResourceRequest",
                                  "The resources of a partition (the vendor's resource-group fields).")
      .def(py::init<>())
      .def(py::init([](uint32_t numNsp, uint32_t numMcid, uint32_t numSem, uint32_t numVc, uint64_t ddrSize) {
             return rt::ResourceRequest{numNsp, numMcid, numSem, numVc, ddrSize};
           }),
           py::arg("numNsp"), py::arg("numMcid") = 0, py::arg("numSem") = 0, py::arg("numVc") = 1,
           py::arg("ddrSize") = 0)
      .def_readwrite("numNsp", &rt::ResourceRequest::numNsp)
      .def_readwrite("numMcid", &rt::ResourceRequest::numMcid)
      .def_readwrite("numSem", &rt::ResourceRequest::numSem)
      .def_readwrite("numVc", &rt::ResourceRequest::numVc)
      .def_readwrite("ddrSize", &rt::ResourceRequest::ddrSize, "Bytes.")
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__repr__", [](const rt::ResourceRequest& r) {
        return "ResourceRequest(numNsp=" + std::to_string(r.numNsp) + ", numMcid=" + std::to_string(r.numMcid) +
               ", numSem=" + std::to_string(r.numSem) + ", numVc=" + std::to_string(r.numVc) +
               ", ddrSize=" + std::to_string(r.ddrSize) + ")";
      });
  m.def("resourcesFor", &rt::resourcesFor, py::arg("qpc"), py::arg("numActivations"), py::arg("programIndex") = 0,
        "What numActivations activations of a program need (the rule the device charges by).");

  py::class_<PyPartition>(m, "Partition", R"doc(
A share of one device leased from qaicd, seen as its own device id (100 and up) while this
object lives. Partition.acquire(request, device=None, label="") raises qaicrt.Error:
QS_NO_RESOURCES naming the resource, QS_NODEV when qaicd is not running.
)doc")
      .def_static(
          "acquire",
          [](const rt::ResourceRequest& request, std::optional<rt::QID> device, const std::string& label) {
            auto p = std::make_unique<PyPartition>();
            withoutGil([&] { p->partition = rt::Partition::acquire(request, device, label); });
            return p;
          },
          py::arg("request"), py::arg("device") = py::none(), py::arg("label") = "")
      .def(
          "id", [](const PyPartition& p) { return p.partition->id(); }, "The derived device: pass it to Context.")
      .def("parent", [](const PyPartition& p) { return p.partition->parent(); })
      .def("resources", [](const PyPartition& p) { return p.partition->resources(); })
      .def("label", [](const PyPartition& p) { return p.partition->label(); })
      .def("node", [](const PyPartition& p) { return p.partition->node(); });

  py::class_<PyContextProperties>(m, "QAicContextProperties")
      .def(py::init<>())
      .def_readwrite("initialLogLevel", &PyContextProperties::initialLogLevel)
      .def_readwrite("partition", &PyContextProperties::partition,
                     "A ResourceRequest: the context leases a partition of that size from qaicd and holds it.");

  py::class_<PyContext>(m, "Context", kContextDoc)
      .def(py::init([](const std::vector<rt::QID>& devices, const PyContextProperties* properties,
                       const py::object& logCallback, const py::object& logUserData, const py::object& errorHandler,
                       const py::object& errorUserData) {
             return makeContext(properties, devices, logCallback, logUserData, errorHandler, errorUserData);
           }),
           py::arg("devices") = std::vector<rt::QID>{}, py::arg("properties") = nullptr,
           py::arg("logCallback") = py::none(), py::arg("logUserData") = py::none(),
           py::arg("errorHandler") = py::none(), py::arg("errorUserData") = py::none())
      .def_static("Factory", &makeContext, py::arg("properties"), py::arg("devices"),
                  py::arg("logCallback") = py::none(), py::arg("logUserData") = py::none(),
                  py::arg("errorHandler") = py::none(), py::arg("errorUserData") = py::none())
      .def(
          "setLogLevel",
          [](PyContext& c, rt::QLogLevel level) {
            c.context->setLogLevel(level);
            return rt::QS_SUCCESS;  // the vendor's callers compare it with QS_SUCCESS
          },
          py::arg("level"), "Returns QS_SUCCESS.")
      .def("getLogLevel", [](const PyContext& c) { return c.context->getLogLevel(); })
      .def(
          "getId", [](const PyContext& c) { return c.context->getId(); },
          "Unique in this process; passed to the error handler.")
      .def("getDevices", [](const PyContext& c) { return c.context->getDevices(); })
      .def(
          "getPartition",
          [](const PyContext& c) -> std::unique_ptr<PyPartition> {
            auto partition = c.context->getPartition();
            if (!partition) return nullptr;
            auto p = std::make_unique<PyPartition>();
            p->partition = std::move(partition);
            return p;
          },
          "The partition acquired through properties.partition, or None.")
      .def(
          "allocateDmaBuffer",
          [](PyContext& c, rt::QID device, std::size_t size) {
            auto d = std::make_unique<PyDma>();
            withoutGil([&] { d->dma = c.context->allocateDmaBuffer(device, size); });
            return d;
          },
          py::arg("device"), py::arg("size"), "A DmaBuffer of `size` bytes on `device`.");
}

}  // namespace qaicrt
