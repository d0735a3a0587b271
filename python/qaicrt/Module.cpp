// qaicrt: libqaic's runtime API (seed 001) for Python, one to one, on the public headers only.
#include "Common.hpp"
#include "QaicVersion.hpp"

PYBIND11_MODULE(qaicrt, m) {
  namespace rt = qaic::rt;
  namespace py = pybind11;
  m.doc() = R"doc(
libqaic's runtime API for Python (seed 001, one to one): Qpc, Context, InferenceSet with
InferenceHandles, QBuffer over numpy arrays and other buffers without copies, DmaBuffer,
InferenceSetGroup, ProfilingHandle, Partition and Util. Errors are qaicrt.Error exceptions
carrying the QStatus and the runtime's message. Blocking calls release the GIL; callbacks from
the runtime's threads take it. The qaic package builds a Session on top of this module.
)doc";
  m.attr("__version__") = std::string(qaic::kStackVersion);

  py::enum_<rt::QStatus>(m, "QStatus", "The outcome of a call or an inference.")
      .value("QS_SUCCESS", rt::QS_SUCCESS)
      .value("QS_ERROR", rt::QS_ERROR)
      .value("QS_INVAL", rt::QS_INVAL)
      .value("QS_TIMEDOUT", rt::QS_TIMEDOUT)
      .value("QS_NODEV", rt::QS_NODEV)
      .value("QS_DEV_REMOVED", rt::QS_DEV_REMOVED)
      .value("QS_DEV_RESET", rt::QS_DEV_RESET)
      .value("QS_BUFFER_SIZE", rt::QS_BUFFER_SIZE)
      .value("QS_BUFFER_DIMS", rt::QS_BUFFER_DIMS)
      .value("QS_INCOMPATIBLE", rt::QS_INCOMPATIBLE)
      .value("QS_NO_RESOURCES", rt::QS_NO_RESOURCES)
      .value("QS_WRONG_STATE", rt::QS_WRONG_STATE)
      .value("QS_WRONG_SET", rt::QS_WRONG_SET)
      .value("QS_DEVICE_ERROR", rt::QS_DEVICE_ERROR)
      .value("QS_CANCELED", rt::QS_CANCELED)
      .export_values();
  py::enum_<rt::QLogLevel>(m, "QLogLevel")
      .value("QL_DEBUG", rt::QL_DEBUG)
      .value("QL_INFO", rt::QL_INFO)
      .value("QL_WARN", rt::QL_WARN)
      .value("QL_ERROR", rt::QL_ERROR)
      .export_values();
  py::enum_<rt::QAicBufferDataTypeEnum>(m, "QAicBufferDataTypeEnum", "A buffer's element type.")
      .value("BUFFER_DATA_TYPE_FLOAT", rt::BUFFER_DATA_TYPE_FLOAT)
      .value("BUFFER_DATA_TYPE_FLOAT16", rt::BUFFER_DATA_TYPE_FLOAT16)
      .value("BUFFER_DATA_TYPE_INT8Q", rt::BUFFER_DATA_TYPE_INT8Q)
      .value("BUFFER_DATA_TYPE_UINT8Q", rt::BUFFER_DATA_TYPE_UINT8Q)
      .value("BUFFER_DATA_TYPE_INT16Q", rt::BUFFER_DATA_TYPE_INT16Q)
      .value("BUFFER_DATA_TYPE_INT32Q", rt::BUFFER_DATA_TYPE_INT32Q)
      .value("BUFFER_DATA_TYPE_INT32I", rt::BUFFER_DATA_TYPE_INT32I)
      .value("BUFFER_DATA_TYPE_INT64I", rt::BUFFER_DATA_TYPE_INT64I)
      .value("BUFFER_DATA_TYPE_INT8", rt::BUFFER_DATA_TYPE_INT8)
      .value("BUFFER_DATA_TYPE_UINT8", rt::BUFFER_DATA_TYPE_UINT8)
      .value("BUFFER_DATA_TYPE_FLOAT64C", rt::BUFFER_DATA_TYPE_FLOAT64C)
      .value("BUFFER_DATA_TYPE_INVAL", rt::BUFFER_DATA_TYPE_INVAL)
      .export_values();
  py::enum_<rt::QAicBufferIoTypeEnum>(m, "QAicBufferIoTypeEnum", "A buffer's direction from the user's side.")
      .value("BUFFER_IO_TYPE_INPUT", rt::BUFFER_IO_TYPE_INPUT)
      .value("BUFFER_IO_TYPE_OUTPUT", rt::BUFFER_IO_TYPE_OUTPUT)
      .value("BUFFER_IO_TYPE_INVAL", rt::BUFFER_IO_TYPE_INVAL)
      .export_values();
  py::enum_<rt::QBufferType>(m, "QBufferType")
      .value("QBUFFER_TYPE_HEAP", rt::QBUFFER_TYPE_HEAP)
      .value("QBUFFER_TYPE_DMABUF", rt::QBUFFER_TYPE_DMABUF)
      .export_values();
  py::enum_<rt::ProfilingType>(m, "ProfilingType")
      .value("PROFILING_TYPE_LATENCY", rt::PROFILING_TYPE_LATENCY)
      .export_values();

  qaicrt::bindErrors(m);
  qaicrt::bindBuffers(m);
  qaicrt::bindQpc(m);
  qaicrt::bindContext(m);
  qaicrt::bindInferenceSet(m);
  qaicrt::bindGroupAndProfiling(m);
  qaicrt::bindUtil(m);
  qaicrt::installExitHook();
}
