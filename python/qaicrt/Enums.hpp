// SPDX-License-Identifier: Apache-2.0
// The runtime's enums as Python enum.IntEnum classes (qaicrt.QStatus, ...): members compare,
// hash and format as the ints they are, at the speed of ints (a status is checked after every
// inference), and any int of a member's value is accepted where an enum is expected.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace qaicrt {

template <typename Enum>
struct IntEnum {
  static inline PyObject* type = nullptr;        // the enum.IntEnum subclass (module lifetime)
  static inline std::vector<PyObject*> members;  // by value; null where no member has that value
};

// Creates the IntEnum `name` in `m` and puts its members beside it (qaicrt.QS_SUCCESS as in C++).
template <typename Enum>
void defineIntEnum(pybind11::module_& m, const char* name, const char* doc,
                   std::initializer_list<std::pair<const char*, Enum>> values) {
  namespace py = pybind11;
  py::list items;
  for (const auto& [member, value] : values) items.append(py::make_tuple(member, static_cast<long>(value)));
  py::object type = py::module_::import("enum").attr("IntEnum")(name, items, py::arg("module") = "qaicrt");
  type.attr("__doc__") = doc;
  m.attr(name) = type;
  IntEnum<Enum>::type = type.release().ptr();
  for (const auto& [member, value] : values) {
    py::object object = py::reinterpret_borrow<py::object>(IntEnum<Enum>::type).attr(member);
    m.attr(member) = object;
    const auto index = static_cast<std::size_t>(value);
    if (IntEnum<Enum>::members.size() <= index) IntEnum<Enum>::members.resize(index + 1, nullptr);
    IntEnum<Enum>::members[index] = object.release().ptr();
  }
}

// The conversions of the type_caster QAICRT_INT_ENUM declares: any Python int that is a member's
// value (members are ints) loads; a value converts to its member, or to a plain int when the
// binding has no member for it.
template <typename Enum>
bool loadIntEnum(pybind11::handle source, Enum& value) {
  if (!source || !PyLong_Check(source.ptr())) return false;
  const long number = PyLong_AsLong(source.ptr());
  if (number == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  const auto& members = IntEnum<Enum>::members;
  if (number < 0 || static_cast<std::size_t>(number) >= members.size() || members[number] == nullptr) return false;
  value = static_cast<Enum>(number);
  return true;
}

template <typename Enum>
pybind11::handle castIntEnum(Enum value) {
  const auto index = static_cast<std::size_t>(value);
  const auto& members = IntEnum<Enum>::members;
  if (index < members.size() && members[index] != nullptr) return pybind11::handle(members[index]).inc_ref();
  return PyLong_FromLong(static_cast<long>(value));
}

}  // namespace qaicrt

#define QAICRT_INT_ENUM(Enum, Name)                                                                      \
  namespace pybind11::detail {                                                                           \
  template <>                                                                                            \
  struct type_caster<Enum> {                                                                             \
    PYBIND11_TYPE_CASTER(Enum, const_name(Name));                                                        \
    bool load(handle source, bool) { return qaicrt::loadIntEnum(source, value); }                        \
    static handle cast(Enum source, return_value_policy, handle) { return qaicrt::castIntEnum(source); } \
  };                                                                                                     \
  }
