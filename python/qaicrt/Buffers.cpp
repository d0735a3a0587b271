// SPDX-License-Identifier: Apache-2.0
// QBuffer over any C-contiguous buffer-protocol object, without a copy, and DmaBuffer as memory
// numpy can use in place.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>

#include "Common.hpp"

namespace qaicrt {

namespace {

// The element format of the memory under `source`: the exporter at the bottom of its chain of
// memoryviews and numpy views ("" when that is `source` itself or its format cannot be read).
// A cast view (memoryview(objects).cast('B')) or an array made over one hides it.
std::string exporterFormat(const py::object& source) {
  py::handle current = source;
  for (int depth = 0; depth < 64; ++depth) {
    py::handle below;
    if (PyMemoryView_Check(current.ptr()))
      below = PyMemoryView_GET_BUFFER(current.ptr())->obj;
    else if (py::isinstance<py::array>(current))
      below = py::reinterpret_borrow<py::array>(current).base();
    if (!below || below.is_none() || below.ptr() == current.ptr()) break;
    current = below;
  }
  if (current.ptr() == source.ptr()) return "";
  Py_buffer view{};
  if (PyObject_GetBuffer(current.ptr(), &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return "";
  }
  std::string format = view.format != nullptr ? view.format : "";
  PyBuffer_Release(&view);
  return format;
}

}  // namespace

PyQBuffer::PyQBuffer(const py::object& source, const std::string& what) : owner_(source) {
  // Writable if the object allows it; with the element format when the object can tell it (to
  // refuse Python objects), else as plain bytes (numpy has no buffer format for datetime64).
  const int attempts[] = {PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT,
                          PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS};
  for (const int flags : attempts) {
    if (PyObject_GetBuffer(source.ptr(), &view_, flags) == 0) {
      hasView_ = true;
      writable_ = (flags & PyBUF_WRITABLE) != 0;
      break;
    }
    if (flags != attempts[3]) PyErr_Clear();
  }
  auto typeName = [&] { return std::string(py::str(py::type::handle_of(source).attr("__name__"))); };
  if (!hasView_) {
    const py::error_already_set reason;  // the exporter's own words (fetched and cleared first)
    const std::string type = typeName();
    if (!PyObject_CheckBuffer(source.ptr()))
      throw py::type_error(what + ": a " + type +
                           " has no buffer (pass a numpy array, bytearray, memoryview or bytes)");
    Py_buffer any{};
    const bool exports = PyObject_GetBuffer(source.ptr(), &any, PyBUF_STRIDES) == 0;
    if (exports)
      PyBuffer_Release(&any);
    else
      PyErr_Clear();
    if (exports)
      raiseStatus(rt::QS_INVAL, what + ": the " + type +
                                    " is not C-contiguous; a QBuffer shares the memory and never copies it "
                                    "(numpy.ascontiguousarray makes a contiguous copy)");
    raiseStatus(rt::QS_INVAL, what + ": the " + type + " cannot share its memory (" + reason.what() + ")");
  }
  // The runtime would read object pointers as data, and write data over them: refused in the
  // object's own format, and behind a byte view of it (memoryview(objects).cast('B') says 'B').
  std::string format = view_.format != nullptr ? view_.format : "";
  if (format.find('O') == std::string::npos) format = exporterFormat(source);
  if (format.find('O') != std::string::npos) {
    PyBuffer_Release(&view_);
    hasView_ = false;
    raiseStatus(rt::QS_INVAL,
                what + ": the " + typeName() + " holds Python objects (format '" + format + "'), not data");
  }
  buffer_.type = rt::QBUFFER_TYPE_HEAP;
  buffer_.buf = static_cast<uint8_t*>(view_.buf);
  buffer_.size = static_cast<std::size_t>(view_.len);
}

PyQBuffer::PyQBuffer(const rt::QBuffer& region, py::object owner) : buffer_(region), owner_(std::move(owner)) {}

PyQBuffer::~PyQBuffer() {
  if (hasView_) PyBuffer_Release(&view_);  // Python destroys QBuffer objects, with the GIL
}

std::string PyQBuffer::describe() const {
  const py::handle type = py::type::handle_of(owner_);
  const std::string module = py::str(type.attr("__module__"));
  const std::string name = py::str(type.attr("__name__"));
  return module == "builtins" ? name : module + "." + name;
}

BufferList toBufferList(const py::sequence& items, const std::function<std::string(std::size_t)>& nameOf) {
  BufferList list;
  // Owned items: a sequence may make them on the fly (the rows of a 2-D numpy array).
  const std::vector<py::object> objects = itemsOf(items, "buffers");
  list.owners.reserve(objects.size());
  list.buffers.reserve(objects.size());
  for (const py::object& item : objects) {
    SharedQBuffer owner = py::isinstance<PyQBuffer>(item)
                              ? item.cast<SharedQBuffer>()
                              : std::make_shared<PyQBuffer>(item, nameOf(list.owners.size()));
    list.buffers.push_back(owner->qbuffer());
    list.owners.push_back(std::move(owner));
  }
  return list;
}

PyDma::~PyDma() {
  withoutGil([&] { dma.reset(); });
}

namespace {

py::buffer_info bytesOf(uint8_t* data, std::size_t size, bool readonly) {
  return py::buffer_info(data, 1, py::format_descriptor<uint8_t>::format(), 1, {static_cast<py::ssize_t>(size)}, {1},
                         readonly);
}

// A numpy array over [offset, offset + shape x itemsize) of a DMA buffer, its base `self`.
py::array dmaArray(const py::object& self, const py::object& dtypeLike, const py::object& shapeLike,
                   std::size_t offset) {
  const auto& dma = *self.cast<const PyDma&>().dma;
  py::dtype dtype;
  try {
    dtype = py::dtype::from_args(dtypeLike);
  } catch (py::error_already_set& e) {
    // numpy's own TypeError stays one; what else its parser raises for a malformed dtype (an
    // OverflowError for a field offset beyond a C long) is the argument's ValueError.
    if (e.matches(PyExc_TypeError) || !raisedByTheArgument(e)) throw;
    throw py::value_error(std::string("DmaBuffer.numpy: dtype: ") + e.what());
  }
  const std::string dtypeName = py::str(py::object(dtype));
  // The memory holds plain data: an object dtype would read its bytes as object pointers, and a
  // zero-size element has no place in it.
  if (dtype.attr("hasobject").cast<bool>())
    throw py::value_error("DmaBuffer.numpy: dtype " + dtypeName + " holds Python objects, not data");
  if (dtype.itemsize() <= 0)
    throw py::value_error("DmaBuffer.numpy: dtype " + dtypeName + " has no size (give one, e.g. 'S8')");
  const auto itemsize = static_cast<std::size_t>(dtype.itemsize());
  if (offset > dma.size())
    throw py::value_error("DmaBuffer.numpy: offset " + std::to_string(offset) + " is past the buffer's " +
                          std::to_string(dma.size()) + " bytes");
  std::vector<py::ssize_t> shape;
  if (shapeLike.is_none()) {
    if ((dma.size() - offset) % itemsize != 0)
      throw py::value_error("DmaBuffer.numpy: " + std::to_string(dma.size() - offset) +
                            " bytes are not a whole number of " + std::to_string(itemsize) +
                            "-byte elements; give a shape");
    shape.push_back(static_cast<py::ssize_t>((dma.size() - offset) / itemsize));
  } else {
    constexpr auto kLargest = static_cast<uint64_t>(std::numeric_limits<py::ssize_t>::max());
    const std::string what = "DmaBuffer.numpy: shape";
    if (PyIndex_Check(shapeLike.ptr())) {
      shape.push_back(static_cast<py::ssize_t>(unsignedOf(shapeLike, what, kLargest)));
    } else {
      const auto items = itemsOf(shapeLike, what);
      for (std::size_t i = 0; i < items.size(); ++i)
        shape.push_back(static_cast<py::ssize_t>(unsignedOf(items[i], what + "[" + std::to_string(i) + "]", kLargest)));
    }
  }
  // The bytes, and the strides numpy derives from the shape: with a zero among the dims the
  // bytes are 0 whatever the others, but the strides are products of the others and must fit.
  std::size_t bytes = itemsize, stride = itemsize;
  bool overflow = false;
  for (auto d : shape) {
    const auto dimension = static_cast<std::size_t>(d);
    overflow = overflow || __builtin_mul_overflow(bytes, dimension, &bytes) ||
               (dimension != 0 && __builtin_mul_overflow(stride, dimension, &stride));
  }
  overflow = overflow || stride > static_cast<std::size_t>(std::numeric_limits<py::ssize_t>::max());
  if (overflow || bytes > dma.size() - offset)
    throw py::value_error("DmaBuffer.numpy: " + (overflow ? std::string("the shape's") : std::to_string(bytes)) +
                          " bytes at offset " + std::to_string(offset) + " do not fit the buffer's " +
                          std::to_string(dma.size()) + " bytes");
  return py::array(dtype, shape, {}, dma.data() + offset, self);
}

}  // namespace

void bindBuffers(py::module_& m) {
  py::class_<PyQBuffer, SharedQBuffer>(m, "QBuffer", py::buffer_protocol(), R"doc(
A user buffer of an inference: heap memory or a region of a DmaBuffer (seed 001's QBuffer).

QBuffer(obj) shares the memory of any C-contiguous buffer-protocol object (numpy array,
bytearray, memoryview, bytes) without copying it, and keeps `obj` alive and its export held
(a bytearray cannot be resized) for as long as the QBuffer lives. InferenceHandle.setBuffers
keeps the QBuffers it was given until they are replaced, so the runtime reads inputs from and
writes outputs into `obj` itself. Read-only objects (bytes) can only be inputs.

An object without a buffer raises TypeError; a buffer that is not C-contiguous, that holds
Python objects (dtype object) or that its object cannot export raises InvalidArgumentError
(a ValueError). In setBuffers and friends the message names the buffer: "buffer 'x' (index 0)".

A QBuffer is itself a buffer: numpy.asarray(qbuffer) views the same bytes.
)doc")
      .def(py::init([](const py::object& source) { return new PyQBuffer(source); }), py::arg("obj"),
           "Share the memory of `obj` (C-contiguous, buffer protocol); no copy is made.")
      .def_property_readonly(
          "size", [](const PyQBuffer& b) { return b.qbuffer().size; }, "Bytes.")
      .def_property_readonly(
          "buf", [](const PyQBuffer& b) { return reinterpret_cast<uintptr_t>(b.qbuffer().buf); },
          "The memory's address.")
      .def_property_readonly(
          "handle", [](const PyQBuffer& b) { return b.qbuffer().handle; },
          "DMA: the DmaBuffer's exported descriptor; -1 for heap memory.")
      .def_property_readonly(
          "offset", [](const PyQBuffer& b) { return b.qbuffer().offset; },
          "DMA: where the region starts inside the DmaBuffer.")
      .def_property_readonly(
          "type", [](const PyQBuffer& b) { return b.qbuffer().type; }, "QBufferType.")
      .def_property_readonly(
          "readonly", [](const PyQBuffer& b) { return !b.writable(); },
          "True for memory that cannot be written (an input only).")
      .def_property_readonly("obj", &PyQBuffer::owner, "The object whose memory this is.")
      .def_buffer([](const PyQBuffer& b) { return bytesOf(b.qbuffer().buf, b.qbuffer().size, !b.writable()); })
      .def("__repr__", [](const PyQBuffer& b) {
        const auto& q = b.qbuffer();
        return "QBuffer(" + std::string(q.type == rt::QBUFFER_TYPE_DMABUF ? "dma" : "heap") + ", " +
               std::to_string(q.size) + " bytes of " + b.describe() + (b.writable() ? "" : ", read-only") + ")";
      });

  py::class_<PyDma>(m, "DmaBuffer", py::buffer_protocol(), R"doc(
A device buffer object mapped into this process (Context.allocateDmaBuffer,
InferenceSet.allocateDmaBuffer). qbuffer(offset, bytes) makes a QBuffer of a region; numpy()
(or numpy.asarray(dma)) is a writable array over the same pages, whose base keeps the
DmaBuffer alive. Where a buffer's device format is its user format the device reads and writes
these pages in place. Do not touch a region while an inference using it is in flight.
)doc")
      .def(
          "size", [](const PyDma& d) { return d.dma->size(); }, "Bytes.")
      .def(
          "fd", [](const PyDma& d) { return d.dma->fd(); }, "The exported descriptor (QBuffer.handle).")
      .def(
          "data", [](const PyDma& d) { return reinterpret_cast<uintptr_t>(d.dma->data()); }, "The mapped address.")
      .def(
          "qbuffer",
          [](const py::object& self, std::size_t offset, std::size_t bytes) {
            const auto& dma = *self.cast<const PyDma&>().dma;
            return new PyQBuffer(dma.qbuffer(offset, bytes), self);
          },
          py::arg("offset") = 0, py::arg("bytes") = 0,
          "A QBuffer (type DMA) for [offset, offset + bytes); bytes 0 means to the end. It keeps this "
          "DmaBuffer alive.")
      .def("numpy", &dmaArray, py::arg("dtype") = py::str("uint8"), py::arg("shape") = py::none(),
           py::arg("offset") = 0,
           "A writable numpy array over the buffer from `offset` (shape None: as many elements as fit); "
           "its base is this DmaBuffer. ValueError for a dtype of Python objects or of no size, or a shape "
           "that does not fit; TypeError for a shape that is no integer or sequence of integers.")
      .def_buffer([](const PyDma& d) { return bytesOf(d.dma->data(), d.dma->size(), false); })
      .def("__repr__", [](const PyDma& d) {
        return "DmaBuffer(" + std::to_string(d.dma->size()) + " bytes, fd " + std::to_string(d.dma->fd()) + ")";
      });
}

}  // namespace qaicrt
