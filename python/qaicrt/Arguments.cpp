// SPDX-License-Identifier: Apache-2.0
// Reading sequence and integer arguments by hand rather than through pybind11's casters: a
// caster lets an exception raised while it iterates an argument escape as it is (a memoryview
// of an unsupported format raises NotImplementedError), and its TypeError names no argument.
#include <limits>

#include "Common.hpp"

namespace qaicrt {
namespace {

std::string typeName(const py::handle& value) { return py::str(py::type::handle_of(value).attr("__name__")); }

}  // namespace

bool raisedByTheArgument(const py::error_already_set& error) {
  return error.matches(PyExc_Exception) && !error.matches(PyExc_MemoryError);
}

std::vector<py::object> itemsOf(const py::handle& value, const std::string& what) {
  if (!PySequence_Check(value.ptr()) || py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value))
    throw py::type_error(what + ": expected a sequence, not a " + typeName(value));
  std::vector<py::object> items;
  try {
    // Each item is owned here: a sequence may make it on the fly (a numpy array's scalars), and a
    // borrowed handle would outlive it.
    const Py_ssize_t count = PySequence_Size(value.ptr());
    if (count < 0) throw py::error_already_set();
    for (Py_ssize_t i = 0; i < count; ++i) {
      PyObject* item = PySequence_GetItem(value.ptr(), i);
      if (item == nullptr) throw py::error_already_set();
      items.push_back(py::reinterpret_steal<py::object>(item));
    }
  } catch (py::error_already_set& e) {
    if (!raisedByTheArgument(e)) throw;
    throw py::type_error(what + ": the " + typeName(value) + "'s items cannot be read (" + e.what() + ")");
  }
  return items;
}

uint64_t unsignedOf(const py::handle& value, const std::string& what, uint64_t max) {
  PyObject* index = PyNumber_Index(value.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    throw py::type_error(what + ": a " + typeName(value) + " is not an integer");
  }
  const py::object integer = py::reinterpret_steal<py::object>(index);
  if (py::int_(integer) < py::int_(0))
    throw py::value_error(what + ": " + std::string(py::str(value)) + " is negative");
  const unsigned long long n = PyLong_AsUnsignedLongLong(integer.ptr());
  if ((n == static_cast<unsigned long long>(-1) && PyErr_Occurred()) || n > max) {
    PyErr_Clear();
    throw py::value_error(what + ": " + std::string(py::str(value)) + " is out of range");
  }
  return n;
}

std::vector<uint64_t> dimsOf(const py::handle& value, const std::string& what) {
  std::vector<uint64_t> dims;
  const auto items = itemsOf(value, what);
  for (std::size_t i = 0; i < items.size(); ++i)
    dims.push_back(unsignedOf(items[i], what + "[" + std::to_string(i) + "]", std::numeric_limits<uint64_t>::max()));
  return dims;
}

}  // namespace qaicrt
