// SPDX-License-Identifier: Apache-2.0
#include "PythonArgsObjects.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>

namespace qaic::fuzz {
namespace {

// dtypes with a buffer format, and some without one (datetime, object) or unusual ones.
const char* const kDtypes[] = {
    "?",     "i1",     "u1",  "<i2", ">i2", "<u2",  "<i4", ">i4", "<u4", "<i8", "<u8",
    "<f2",   "<f4",    ">f4", "<f8", "<c8", "<c16", "V3",  "S5",  "U2",  "O",   "i4,i1" /* structured */,
    "M8[s]", "m8[ms]", "f4,O"};

py::tuple tupleOf(const std::vector<py::ssize_t>& values) {
  py::tuple tuple(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) tuple[i] = py::int_(values[i]);
  return tuple;
}

py::object byteArray(const std::string& bytes) {
  PyObject* object = PyByteArray_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
  if (object == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(object);
}

[[noreturn]] void harnessError(const std::string& what) {
  std::fprintf(stderr, "python_args: %s\n", what.c_str());
  std::abort();
}

}  // namespace

py::handle interned(const char* name) {
  static std::map<std::string, py::object, std::less<>> names;
  auto it = names.find(std::string_view(name));
  if (it == names.end()) {
    PyObject* string = PyUnicode_InternFromString(name);
    if (string == nullptr) throw py::error_already_set();
    it = names.emplace(name, py::reinterpret_steal<py::object>(string)).first;
  }
  return it->second;
}

Expected expectationOf(const py::handle& object) {
  Expected e;
  static const py::object qbufferType = py::module_::import("qaicrt").attr(interned("QBuffer"));
  if (py::isinstance(object, qbufferType)) {
    e.isQBuffer = e.hasBufferSlot = e.exportable = e.contiguous = true;
    e.data = object.attr(interned("buf")).cast<uintptr_t>();
    e.bytes = object.attr(interned("size")).cast<std::size_t>();
    e.readonly = object.attr(interned("readonly")).cast<bool>();
    e.content.assign(reinterpret_cast<const char*>(e.data), e.bytes);
    return e;
  }
  e.hasBufferSlot = PyObject_CheckBuffer(object.ptr()) != 0;
  Py_buffer view{};
  if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_FULL_RO) == 0) {
    e.holdsObjects = view.format != nullptr && std::strchr(view.format, 'O') != nullptr;
    PyBuffer_Release(&view);
  } else {
    PyErr_Clear();
  }
  // The memory underneath, where a view hides it: memoryview.obj and ndarray.base down to the
  // exporter, objects if that is an object array (a cast view of one says 'B').
  static const py::object ndarrayType = py::module_::import("numpy").attr(interned("ndarray"));
  py::object below = py::reinterpret_borrow<py::object>(object);
  for (int depth = 0; depth < 64; ++depth) {
    py::object next;
    if (PyMemoryView_Check(below.ptr()))
      next = below.attr(interned("obj"));
    else if (py::isinstance(below, ndarrayType))
      next = below.attr(interned("base"));
    if (!next || next.is_none() || next.is(below)) break;
    below = next;
  }
  if (py::isinstance(below, ndarrayType) && below.attr(interned("dtype")).attr(interned("hasobject")).cast<bool>())
    e.holdsObjects = true;
  if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_STRIDES) != 0) {
    PyErr_Clear();
    return e;
  }
  e.exportable = true;
  e.contiguous = PyBuffer_IsContiguous(&view, 'C') != 0;
  if (view.len == 0) {  // empty: Python calls it contiguous, a strided memoryview still refuses; either holds
    Py_buffer contiguous{};
    e.contiguous = PyObject_GetBuffer(object.ptr(), &contiguous, PyBUF_C_CONTIGUOUS) == 0;
    if (e.contiguous)
      PyBuffer_Release(&contiguous);
    else
      PyErr_Clear();
  }
  e.readonly = view.readonly != 0;
  e.data = reinterpret_cast<uintptr_t>(view.buf);
  e.bytes = static_cast<std::size_t>(view.len);
  if (e.contiguous) e.content.assign(static_cast<const char*>(view.buf), e.bytes);
  PyBuffer_Release(&view);
  return e;
}

ObjectBuilder::ObjectBuilder(FuzzedDataProvider& input, py::object dma)
    : input_(input), dma_(std::move(dma)), numpy_(py::module_::import("numpy")) {}

ObjectBuilder::~ObjectBuilder() { releaseAll(); }

void ObjectBuilder::releaseAll() {
  for (auto& block : blocks_) {
    // memoryview.release() refuses while an export of it is held: an array over it (or a
    // QBuffer's export) that outlived every object of the input.
    try {
      block.view.attr(interned("release"))();
    } catch (py::error_already_set& e) {
      harnessError("an export of an input's memory outlived the input (a reference kept by qaicrt?): " +
                   std::string(e.what()));
    }
    block.view = py::object();
    std::free(block.memory);
  }
  blocks_.clear();
}

py::object ObjectBuilder::harnessArray(const py::object& dtype, const std::vector<py::ssize_t>& shape, bool readonly) {
  std::size_t elements = 1;
  for (auto d : shape) elements *= static_cast<std::size_t>(d);
  const auto itemsize = dtype.attr(interned("itemsize")).cast<std::size_t>();
  if (dtype.attr(interned("hasobject")).cast<bool>() || itemsize == 0)  // no array of these over raw memory
    return numpy_.attr(interned("zeros"))(tupleOf(shape), dtype);
  const std::size_t bytes = elements * itemsize;
  Block block;
  block.memory = std::malloc(bytes == 0 ? 1 : bytes);
  const std::vector<uint8_t> content = input_.ConsumeBytes<uint8_t>(bytes);
  std::memset(block.memory, 0x5c, bytes);
  if (!content.empty()) std::memcpy(block.memory, content.data(), content.size());
  PyObject* view = PyMemoryView_FromMemory(static_cast<char*>(block.memory), static_cast<Py_ssize_t>(bytes),
                                           readonly ? PyBUF_READ : PyBUF_WRITE);
  if (view == nullptr) throw py::error_already_set();
  block.view = py::reinterpret_steal<py::object>(view);
  py::object flat = numpy_.attr(interned("frombuffer"))(block.view, dtype);
  blocks_.push_back(std::move(block));
  return flat.attr(interned("reshape"))(tupleOf(shape));
}

py::object ObjectBuilder::array() {
  const py::object dtype = numpy_.attr(interned("dtype"))(
      kDtypes[input_.ConsumeIntegralInRange<std::size_t>(0, sizeof(kDtypes) / sizeof(kDtypes[0]) - 1)]);
  std::vector<py::ssize_t> shape(input_.ConsumeIntegralInRange(0, 4));
  for (auto& d : shape) d = input_.ConsumeIntegralInRange(0, 5);
  return transformed(harnessArray(dtype, shape, input_.ConsumeBool()));
}

py::object ObjectBuilder::arrayOfBytes(std::size_t bytes) {
  const int itemsize = 1 << input_.ConsumeIntegralInRange(0, 3);
  const char* dtypes[] = {"u1", "<i2", "<f4", "<f8"};
  if (bytes % static_cast<std::size_t>(itemsize) != 0) return arrayOfBytes(bytes);  // u1 always fits
  py::object array = harnessArray(numpy_.attr(interned("dtype"))(dtypes[itemsize == 1   ? 0
                                                                        : itemsize == 2 ? 1
                                                                        : itemsize == 4 ? 2
                                                                                        : 3]),
                                  {static_cast<py::ssize_t>(bytes / static_cast<std::size_t>(itemsize))},
                                  input_.ConsumeIntegralInRange(0, 7) == 7);
  return input_.ConsumeIntegralInRange(0, 5) == 5 ? transformed(array) : array;
}

py::object ObjectBuilder::transformed(py::object array) {
  const auto ndim = array.attr(interned("ndim")).cast<int>();
  try {
    switch (input_.ConsumeIntegralInRange(0, 10)) {
      case 1: return ndim ? array[py::slice(py::none(), py::none(), py::int_(2))] : array;
      case 2: return ndim ? array[py::slice(py::int_(1), py::none(), py::none())] : array;
      case 3: return array.attr(interned("T"));
      case 4: return ndim ? array[py::slice(py::none(), py::none(), py::int_(-1))] : array;
      case 5: {
        py::tuple shape = array.attr(interned("shape"));
        return numpy_.attr(interned("broadcast_to"))(array, py::tuple(py::make_tuple(2) + shape));
      }
      case 6: return numpy_.attr(interned("ascontiguousarray"))(array.attr(interned("T")));  // numpy's own memory
      case 7: return array.attr(interned("view"))(kDtypes[input_.ConsumeIntegralInRange(0, 15)]);
      case 8: return numpy_.attr(interned("asfortranarray"))(array);
      case 9: return array.attr(interned("__getitem__"))(py::make_tuple(py::ellipsis(), py::none()));  // a new axis
      case 10: return array.attr(interned("reshape"))(-1);
      default: return array;
    }
  } catch (py::error_already_set&) {
    return array;  // a view numpy refuses (itemsize, shape): the array itself
  }
}

py::object ObjectBuilder::any(int depth) {
  try {
    return anyKind(depth);
  } catch (py::error_already_set&) {
    return py::none();  // an object numpy refuses to make (a conversion, a view of a datetime array)
  }
}

py::object ObjectBuilder::anyKind(int depth) {
  const auto small = [&] { return input_.ConsumeIntegralInRange<std::size_t>(0, 48); };
  switch (input_.ConsumeIntegralInRange(0, 17)) {
    case 0:
    case 1: return array();
    case 2: return arrayOfBytes(small());
    case 3: return py::bytes(input_.ConsumeBytesAsString(small()));
    case 4: return byteArray(input_.ConsumeBytesAsString(small()));
    case 5: {  // a memoryview of a bytearray or an array, maybe strided, cast or read-only
      const py::object target = input_.ConsumeBool() ? byteArray(input_.ConsumeBytesAsString(small())) : array();
      py::object view = py::memoryview(target);
      try {
        switch (input_.ConsumeIntegralInRange(0, 3)) {
          case 1: return view[py::slice(py::none(), py::none(), py::int_(2))];
          case 2: return view.attr(interned("cast"))("B");
          case 3: return view.attr(interned("toreadonly"))();
          default: return view;
        }
      } catch (py::error_already_set&) {
        return view;
      }
    }
    case 6: return py::none();
    case 7: {
      const int64_t values[] = {0, 1, -1, int64_t{1} << 31, int64_t{1} << 32, INT64_MAX, INT64_MIN};
      py::object value = py::int_(values[input_.ConsumeIntegralInRange(0, 6)]);
      return input_.ConsumeBool() ? value : value * py::int_(int64_t{1} << 40);  // beyond 64 bits
    }
    case 8: return py::float_(input_.ConsumeFloatingPoint<double>());
    case 9: return py::str(input_.ConsumeBytesAsString(small()).size() % 2 ? "x" : "");
    case 10:
    case 11: {
      py::list items;
      const int count = depth < 2 ? input_.ConsumeIntegralInRange(0, 3) : 0;
      for (int i = 0; i < count; ++i) items.append(any(depth + 1));
      return input_.ConsumeBool() ? py::object(items) : py::object(py::tuple(items));
    }
    case 12: {
      py::dict items;
      if (depth < 2) items["x"] = any(depth + 1);
      return items;
    }
    case 13: {  // a QBuffer made first (an object it accepts)
      try {
        return py::module_::import("qaicrt").attr(interned("QBuffer"))(arrayOfBytes(small()));
      } catch (py::error_already_set&) {
        return py::none();
      }
    }
    case 14: {  // a DMA region, the DmaBuffer itself or numpy over it
      if (dma_.is_none()) return py::none();
      try {
        switch (input_.ConsumeIntegralInRange(0, 2)) {
          case 0: return dma_.attr(interned("qbuffer"))(small(), small());
          case 1: return dma_;
          default: return dma_.attr(interned("numpy"))("u1", py::none(), small());
        }
      } catch (py::error_already_set&) {
        return py::none();
      }
    }
    case 15: return numpy_.attr("float32")(input_.ConsumeFloatingPoint<float>());
    case 16: return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyBaseObject_Type))();
    default: return array().attr(interned("astype"))("<f4");  // numpy's own memory
  }
}

}  // namespace qaic::fuzz
