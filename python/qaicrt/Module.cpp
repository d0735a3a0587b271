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

  using qaicrt::defineIntEnum;
  defineIntEnum<rt::QStatus>(m, "QStatus", "The outcome of a call or an inference.",
                             {{"QS_SUCCESS", rt::QS_SUCCESS},
                              {"QS_ERROR", rt::QS_ERROR},
                              {"QS_INVAL", rt::QS_INVAL},
                              {"QS_TIMEDOUT", rt::QS_TIMEDOUT},
                              {"QS_NODEV", rt::QS_NODEV},
                              {"QS_DEV_REMOVED", rt::QS_DEV_REMOVED},
                              {"QS_DEV_RESET", rt::QS_DEV_RESET},
                              {"QS_BUFFER_SIZE", rt::QS_BUFFER_SIZE},
                              {"QS_BUFFER_DIMS", rt::QS_BUFFER_DIMS},
                              {"QS_INCOMPATIBLE", rt::QS_INCOMPATIBLE},
                              {"QS_NO_RESOURCES", rt::QS_NO_RESOURCES},
                              {"QS_WRONG_STATE", rt::QS_WRONG_STATE},
                              {"QS_WRONG_SET", rt::QS_WRONG_SET},
                              {"QS_DEVICE_ERROR", rt::QS_DEVICE_ERROR},
                              {"QS_CANCELED", rt::QS_CANCELED}});
  defineIntEnum<rt::QLogLevel>(
      m, "QLogLevel", "Logging levels, QL_DEBUG < QL_INFO < QL_WARN < QL_ERROR.",
      {{"QL_DEBUG", rt::QL_DEBUG}, {"QL_INFO", rt::QL_INFO}, {"QL_WARN", rt::QL_WARN}, {"QL_ERROR", rt::QL_ERROR}});
  defineIntEnum<rt::QAicBufferDataTypeEnum>(m, "QAicBufferDataTypeEnum", "A buffer's element type.",
                                            {{"BUFFER_DATA_TYPE_FLOAT", rt::BUFFER_DATA_TYPE_FLOAT},
                                             {"BUFFER_DATA_TYPE_FLOAT16", rt::BUFFER_DATA_TYPE_FLOAT16},
                                             {"BUFFER_DATA_TYPE_INT8Q", rt::BUFFER_DATA_TYPE_INT8Q},
                                             {"BUFFER_DATA_TYPE_UINT8Q", rt::BUFFER_DATA_TYPE_UINT8Q},
                                             {"BUFFER_DATA_TYPE_INT16Q", rt::BUFFER_DATA_TYPE_INT16Q},
                                             {"BUFFER_DATA_TYPE_INT32Q", rt::BUFFER_DATA_TYPE_INT32Q},
                                             {"BUFFER_DATA_TYPE_INT32I", rt::BUFFER_DATA_TYPE_INT32I},
                                             {"BUFFER_DATA_TYPE_INT64I", rt::BUFFER_DATA_TYPE_INT64I},
                                             {"BUFFER_DATA_TYPE_INT8", rt::BUFFER_DATA_TYPE_INT8},
                                             {"BUFFER_DATA_TYPE_UINT8", rt::BUFFER_DATA_TYPE_UINT8},
                                             {"BUFFER_DATA_TYPE_FLOAT64C", rt::BUFFER_DATA_TYPE_FLOAT64C},
                                             {"BUFFER_DATA_TYPE_INVAL", rt::BUFFER_DATA_TYPE_INVAL}});
  defineIntEnum<rt::QAicBufferIoTypeEnum>(m, "QAicBufferIoTypeEnum", "A buffer's direction from the user's side.",
                                          {{"BUFFER_IO_TYPE_INPUT", rt::BUFFER_IO_TYPE_INPUT},
                                           {"BUFFER_IO_TYPE_OUTPUT", rt::BUFFER_IO_TYPE_OUTPUT},
                                           {"BUFFER_IO_TYPE_INVAL", rt::BUFFER_IO_TYPE_INVAL}});
  defineIntEnum<rt::QBufferType>(
      m, "QBufferType", "Heap memory or a region of a DMA buffer.",
      {{"QBUFFER_TYPE_HEAP", rt::QBUFFER_TYPE_HEAP}, {"QBUFFER_TYPE_DMABUF", rt::QBUFFER_TYPE_DMABUF}});
  defineIntEnum<rt::ProfilingType>(m, "ProfilingType", "What a ProfilingHandle collects.",
                                   {{"PROFILING_TYPE_LATENCY", rt::PROFILING_TYPE_LATENCY}});

  qaicrt::bindErrors(m);
  qaicrt::bindBuffers(m);
  qaicrt::bindQpc(m);
  qaicrt::bindContext(m);
  qaicrt::bindInferenceSet(m);
  qaicrt::bindGroupAndProfiling(m);
  qaicrt::bindUtil(m);
  qaicrt::installExitHook();
}
