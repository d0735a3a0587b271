// SPDX-License-Identifier: Apache-2.0
// qaicrt: libqaic's runtime API (seed 001) for Python, one to one, on the public headers only.
#include "Common.hpp"
#include "QaicVersion.hpp"
#include "VendorApi.hpp"

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

  // Each enumerator keeps its C++ name in Python.
#define QAIC_ENUMERATOR(name) \
  { #name, rt::name }
  using qaicrt::defineIntEnum;
  defineIntEnum<rt::QStatus>(
      m, "QStatus", "The outcome of a call or an inference.",
      {QAIC_ENUMERATOR(QS_SUCCESS), QAIC_ENUMERATOR(QS_ERROR), QAIC_ENUMERATOR(QS_INVAL), QAIC_ENUMERATOR(QS_TIMEDOUT),
       QAIC_ENUMERATOR(QS_NODEV), QAIC_ENUMERATOR(QS_DEV_REMOVED), QAIC_ENUMERATOR(QS_DEV_RESET),
       QAIC_ENUMERATOR(QS_BUFFER_SIZE), QAIC_ENUMERATOR(QS_BUFFER_DIMS), QAIC_ENUMERATOR(QS_INCOMPATIBLE),
       QAIC_ENUMERATOR(QS_NO_RESOURCES), QAIC_ENUMERATOR(QS_WRONG_STATE), QAIC_ENUMERATOR(QS_WRONG_SET),
       QAIC_ENUMERATOR(QS_DEVICE_ERROR), QAIC_ENUMERATOR(QS_CANCELED)});
  defineIntEnum<rt::QLogLevel>(
      m, "QLogLevel", "Logging levels, QL_DEBUG < QL_INFO < QL_WARN < QL_ERROR.",
      {QAIC_ENUMERATOR(QL_DEBUG), QAIC_ENUMERATOR(QL_INFO), QAIC_ENUMERATOR(QL_WARN), QAIC_ENUMERATOR(QL_ERROR)});
  defineIntEnum<rt::QAicBufferDataTypeEnum>(
      m, "QAicBufferDataTypeEnum", "A buffer's element type.",
      {QAIC_ENUMERATOR(BUFFER_DATA_TYPE_FLOAT), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_FLOAT16),
       QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT8Q), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_UINT8Q),
       QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT16Q), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT32Q),
       QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT32I), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT64I),
       QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INT8), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_UINT8),
       QAIC_ENUMERATOR(BUFFER_DATA_TYPE_FLOAT64C), QAIC_ENUMERATOR(BUFFER_DATA_TYPE_INVAL)});
  defineIntEnum<rt::QAicBufferIoTypeEnum>(
      m, "QAicBufferIoTypeEnum", "A buffer's direction from the user's side.",
      {QAIC_ENUMERATOR(BUFFER_IO_TYPE_INPUT), QAIC_ENUMERATOR(BUFFER_IO_TYPE_OUTPUT),
       QAIC_ENUMERATOR(BUFFER_IO_TYPE_INVAL)});
  defineIntEnum<rt::QBufferType>(m, "QBufferType", "Heap memory or a region of a DMA buffer.",
                                 {QAIC_ENUMERATOR(QBUFFER_TYPE_HEAP), QAIC_ENUMERATOR(QBUFFER_TYPE_DMABUF)});
  defineIntEnum<rt::ProfilingType>(m, "ProfilingType", "What a ProfilingHandle collects.",
                                   {QAIC_ENUMERATOR(PROFILING_TYPE_LATENCY)});
#undef QAIC_ENUMERATOR

  qaicrt::bindErrors(m);
  qaicrt::bindBuffers(m);
  qaicrt::bindQpc(m);
  qaicrt::bindContext(m);
  qaicrt::bindInferenceSet(m);
  qaicrt::bindGroupAndProfiling(m);
  qaicrt::bindProgram(m);
  qaicrt::bindExecObj(m);
  // The vendor's names for the same enums.
  m.attr("BufferIoTypeEnum") = m.attr("QAicBufferIoTypeEnum");
  m.attr("BufferDataTypeEnum") = m.attr("QAicBufferDataTypeEnum");
  qaicrt::bindUtil(m);
  qaicrt::installExitHook();
}
