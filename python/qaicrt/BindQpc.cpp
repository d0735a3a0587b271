// SPDX-License-Identifier: Apache-2.0
// The program container API (seed 001): Qpc, QpcFile, QpcInfo, QpcProgramInfo, QpcConstantsInfo,
// BufferMapping and v2.BufferMapping with IoShapes.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>

#include "Common.hpp"

namespace qaicrt {
namespace {

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string mappingRepr(const rt::BufferMapping& m) {
  return "BufferMapping('" + m.bufferName + "', index=" + std::to_string(m.index) + ", " +
         (m.ioType == rt::BUFFER_IO_TYPE_INPUT    ? "input"
          : m.ioType == rt::BUFFER_IO_TYPE_OUTPUT ? "output"
                                                  : "inval") +
         ", " + std::to_string(m.size) + " bytes, dataType=" + std::to_string(static_cast<int>(m.dataType)) +
         (m.isPartialBufferAllowed ? ", partial" : "") + ")";
}

// Qpc(path): a directory holding programqpc.bin, or the container file itself.
std::shared_ptr<rt::Qpc> openQpc(const std::filesystem::path& path, const std::string& filename) {
  std::filesystem::path base = path, name = filename;
  std::error_code ec;
  if (filename == "programqpc.bin" && std::filesystem::is_regular_file(path, ec)) {
    base = path.parent_path().empty() ? "." : path.parent_path();
    name = path.filename();
  }
  return withoutGil([&] { return rt::Qpc::Factory(base.string(), name.string()); });
}

}  // namespace

void bindQpc(py::module_& m) {
  py::class_<rt::BufferMapping>(m, "BufferMapping",
                                "One user buffer of a program: name, index, direction, bytes, type.")
      .def(py::init<>())
      .def(py::init<std::string, uint32_t, rt::QAicBufferIoTypeEnum, std::size_t, bool, rt::QAicBufferDataTypeEnum>(),
           py::arg("bufferName"), py::arg("index"), py::arg("ioType"), py::arg("size"),
           py::arg("isPartialBufferAllowed"), py::arg("dataType"))
      .def_readwrite("bufferName", &rt::BufferMapping::bufferName)
      .def_readwrite("index", &rt::BufferMapping::index, "Position in InferenceHandle.setBuffers.")
      .def_readwrite("ioType", &rt::BufferMapping::ioType, "BUFFER_IO_TYPE_INPUT: user to device.")
      .def_readwrite("size", &rt::BufferMapping::size, "Bytes at the full dims.")
      .def_readwrite("isPartialBufferAllowed", &rt::BufferMapping::isPartialBufferAllowed)
      .def_readwrite("dataType", &rt::BufferMapping::dataType)
      .def("__repr__", &mappingRepr);

  py::module_ v2 = m.def_submodule("v2", "BufferMappingsV2: BufferMapping with its shapes.");
  py::class_<rt::v2::IoShapes>(v2, "IoShapes", "Default dims and the dims of every allowed shape combination.")
      .def(py::init<>())
      .def_readwrite("defaultDims", &rt::v2::IoShapes::defaultDims)
      .def_readwrite("allowedDims", &rt::v2::IoShapes::allowedDims,
                     "One entry per allowed combination (allowedDims[0] is the default).");
  py::class_<rt::v2::BufferMapping, rt::BufferMapping>(v2, "BufferMapping",
                                                       "A BufferMapping with IoShapes and the selective-IO flags.")
      .def(py::init<>())
      .def_readwrite("ioShapes", &rt::v2::BufferMapping::ioShapes)
      .def_readwrite("skipPartialHeader", &rt::v2::BufferMapping::skipPartialHeader)
      .def_readwrite("allowSkip", &rt::v2::BufferMapping::allowSkip, "Selective IO: may be dropped from a request.")
      .def("__repr__", [](const rt::v2::BufferMapping& b) {
        std::string text = mappingRepr(b);
        text.insert(text.size() - 1, ", dims=" + dimsText(b.ioShapes.defaultDims));
        return "v2." + text;
      });

  py::class_<rt::QpcProgramInfo>(m, "QpcProgramInfo", "What a program of the container needs and exchanges.")
      .def_readonly("bufferMappings", &rt::QpcProgramInfo::bufferMappings)
      .def_readonly("bufferMappingsDma", &rt::QpcProgramInfo::bufferMappingsDma)
      .def_readonly("name", &rt::QpcProgramInfo::name)
      .def_readonly("numCores", &rt::QpcProgramInfo::numCores)
      .def_readonly("programIndex", &rt::QpcProgramInfo::programIndex)
      .def_readonly("size", &rt::QpcProgramInfo::size)
      .def_readonly("batchSize", &rt::QpcProgramInfo::batchSize)
      .def_readonly("numSemaphores", &rt::QpcProgramInfo::numSemaphores)
      .def_readonly("numMcIds", &rt::QpcProgramInfo::numMcIds)
      .def_readonly("totalRequiredMemory", &rt::QpcProgramInfo::totalRequiredMemory)
      .def_readonly("fp16Constants", &rt::QpcProgramInfo::fp16Constants);
  py::class_<rt::QpcConstantsInfo>(m, "QpcConstantsInfo")
      .def_readonly("name", &rt::QpcConstantsInfo::name)
      .def_readonly("index", &rt::QpcConstantsInfo::index)
      .def_readonly("size", &rt::QpcConstantsInfo::size);
  py::class_<rt::QpcInfo>(m, "QpcInfo", "The container's programs, constants and retained state.")
      .def_readonly("program", &rt::QpcInfo::program)
      .def_readonly("constants", &rt::QpcInfo::constants)
      .def_readonly("retainedState", &rt::QpcInfo::retainedState,
                    "Inputs kept on the device per activation (-retained-state); each pairs with the output "
                    "<name>_RetainedState.")
      .def_readonly("numDevices", &rt::QpcInfo::numDevices,
                    "The devices the program spans: 1, or a multi-device program's part count.");

  py::class_<rt::QpcFile>(m, "QpcFile", "The bytes of a program container file, read by load().")
      .def(py::init<std::string, std::string>(), py::arg("basePath"), py::arg("filename") = "programqpc.bin")
      .def(
          "load", [](rt::QpcFile& f) { withoutGil([&] { f.load(); }); },
          "Reads the file; raises qaicrt.Error naming the path.")
      .def(
          "getBuffer",
          [](const rt::QpcFile& f) { return py::bytes(reinterpret_cast<const char*>(f.data()), f.size()); },
          "The loaded bytes (a copy).")
      .def("size", &rt::QpcFile::size)
      .def("path", &rt::QpcFile::path);

  py::class_<rt::Qpc, std::shared_ptr<rt::Qpc>>(m, "Qpc", py::buffer_protocol(), R"doc(
A loaded, validated program container (seed 001's Qpc).

Qpc(basePath, filename="programqpc.bin") maps basePath/filename; basePath may also name the
container file itself. Qpc.Factory(data) copies a container from any buffer. A malformed
container raises qaicrt.Error naming the file and field. The Qpc is a read-only buffer of the
container's bytes.
)doc")
      .def(py::init(&openQpc), py::arg("basePath"), py::arg("filename") = "programqpc.bin")
      .def_static(
          "Factory",
          [](const py::buffer& data) {
            const PyQBuffer bytes(data, "Qpc.Factory: data");  // C-contiguous, or a ValueError
            return withoutGil([&] { return rt::Qpc::Factory(bytes.qbuffer().buf, bytes.qbuffer().size); });
          },
          py::arg("data"), "A container from the bytes of `data` (copied); bytes, bytearray, numpy arrays...")
      .def_static("Factory", &openQpc, py::arg("basePath"), py::arg("filename") = "programqpc.bin",
                  "The same as Qpc(basePath, filename).")
      .def("getInfo", &rt::Qpc::getInfo, py::return_value_policy::reference_internal)
      .def("getBufferMappings", &rt::Qpc::getBufferMappings, "Every user buffer, in IO-descriptor order.")
      .def("getBufferMappingsV2", &rt::Qpc::getBufferMappingsV2, "The same with IoShapes and selective-IO flags.")
      .def("getBufferMappingsDma", &rt::Qpc::getBufferMappingsDma, "The mappings when buffers are DMA buffers.")
      .def(
          "getIoDescriptor",
          [](const rt::Qpc& q) { return py::make_tuple(rt::QS_SUCCESS, py::bytes(q.getVendorIoDescriptor())); },
          "(QS_SUCCESS, the vendor's IO descriptor): a serialized aicapi.IoDesc (QAicApi_pb2) of every "
          "binding, retained state included, with one allowed_shapes entry per specialization.")
      .def(
          "getIoDescriptorSection",
          [](const rt::Qpc& q) {
            const rt::QData* d = q.getIoDescriptor();
            return py::bytes(reinterpret_cast<const char*>(d->data), d->size);
          },
          "The container's own IO descriptor section (a copy; docs/formats/qpc.md).")
      .def(
          "buffer", [](const py::object& self) { return py::memoryview(self); }, "The container's bytes, read-only.")
      .def("size", &rt::Qpc::size, "Bytes of the container.")
      .def_buffer([](rt::Qpc& q) {
        return py::buffer_info(const_cast<uint8_t*>(q.buffer()), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(q.size())}, {1}, true);
      });
}

}  // namespace qaicrt
