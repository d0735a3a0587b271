// SPDX-License-Identifier: Apache-2.0
// qaicrt's exceptions: every rt::Error (and QpcError) thrown by libqaic becomes one, carrying the
// QStatus and the runtime's message, which names the buffer, field or device involved.
#include "Common.hpp"

namespace qaicrt {
namespace {

struct ExceptionTypes {
  PyObject* error = nullptr;     // qaicrt.Error
  PyObject* invalid = nullptr;   // qaicrt.InvalidArgumentError
  PyObject* timedOut = nullptr;  // qaicrt.TimedOutError
};
// Created once at import and never released (module-lifetime types).
ExceptionTypes types;

PyObject* newException(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("qaicrt.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(type));
  return type;
}

PyObject* typeFor(rt::QStatus status) {
  switch (status) {
    case rt::QS_INVAL:
    case rt::QS_BUFFER_SIZE:
    case rt::QS_BUFFER_DIMS: return types.invalid;
    case rt::QS_TIMEDOUT: return types.timedOut;
    default: return types.error;
  }
}

py::object errorFor(rt::QStatus status, const std::string& message) {
  py::object type = py::reinterpret_borrow<py::object>(typeFor(status));
  py::object error = type(std::string(rt::statusName(status)) + ": " + message);
  error.attr("status") = py::cast(status);
  error.attr("message") = message;
  return error;
}

void setError(rt::QStatus status, const std::string& message) {
  py::object error = errorFor(status, message);
  PyErr_SetObject(typeFor(status), error.ptr());
}

}  // namespace

[[noreturn]] void raiseStatus(rt::QStatus status, const std::string& message) {
  setError(status, message);
  throw py::error_already_set();
}

void bindErrors(py::module_& m) {
  types.error = newException(m, "Error", PyExc_RuntimeError,
                             "A libqaic error: .status is the QStatus, .message the runtime's message "
                             "(naming the buffer, field or device); str() is 'QS_NAME: message'.");
  py::tuple invalidBases = py::make_tuple(py::handle(types.error), py::handle(PyExc_ValueError));
  types.invalid = newException(m, "InvalidArgumentError", invalidBases.ptr(),
                               "qaicrt.Error for QS_INVAL, QS_BUFFER_SIZE and QS_BUFFER_DIMS; also a ValueError.");
  py::tuple timeoutBases = py::make_tuple(py::handle(types.error), py::handle(PyExc_TimeoutError));
  types.timedOut = newException(m, "TimedOutError", timeoutBases.ptr(),
                                "qaicrt.Error for QS_TIMEDOUT; also a TimeoutError.");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const rt::Error& e) {
      setError(e.status(), e.what());
    }
  });
  m.def("errorFor", &errorFor, py::arg("status"), py::arg("message"),
        "The exception qaicrt raises for `status` (not raised): Error, InvalidArgumentError or TimedOutError.");
  m.def(
      "statusName", [](rt::QStatus status) { return std::string(rt::statusName(status)); }, py::arg("status"),
      "The QStatus's name, e.g. 'QS_BUFFER_SIZE'.");
}

}  // namespace qaicrt
