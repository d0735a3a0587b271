// SPDX-License-Identifier: Apache-2.0
#include "container/QpcModel.hpp"

namespace qaic::container {

rt::QAicBufferDataTypeEnum bufferDataTypeFor(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::Float: return rt::BUFFER_DATA_TYPE_FLOAT;
    case ir::DType::Float16: return rt::BUFFER_DATA_TYPE_FLOAT16;
    case ir::DType::Int64: return rt::BUFFER_DATA_TYPE_INT64I;
    case ir::DType::Int32: return rt::BUFFER_DATA_TYPE_INT32I;
    case ir::DType::Int16: return rt::BUFFER_DATA_TYPE_INT16Q;
    case ir::DType::Int8: return rt::BUFFER_DATA_TYPE_INT8;
    case ir::DType::UInt8: return rt::BUFFER_DATA_TYPE_UINT8;
    case ir::DType::Bool: return rt::BUFFER_DATA_TYPE_UINT8;  // one byte, 0 or 1
    case ir::DType::Double:
    case ir::DType::UInt64:
    case ir::DType::UInt32:
    case ir::DType::UInt16: return rt::BUFFER_DATA_TYPE_INVAL;
  }
  return rt::BUFFER_DATA_TYPE_INVAL;
}

const char* deviceConnectionName(DeviceConnection connection) {
  switch (connection) {
    case DeviceConnection::P2p: return "p2p";
  }
  return "unknown";
}

const char* bufferDataTypeName(rt::QAicBufferDataTypeEnum type) {
  // The enumerator's own name, spelled once.
#define QAIC_NAME(name) \
  case rt::name: return #name;
  switch (type) {
    QAIC_NAME(BUFFER_DATA_TYPE_FLOAT)
    QAIC_NAME(BUFFER_DATA_TYPE_FLOAT16)
    QAIC_NAME(BUFFER_DATA_TYPE_INT8Q)
    QAIC_NAME(BUFFER_DATA_TYPE_UINT8Q)
    QAIC_NAME(BUFFER_DATA_TYPE_INT16Q)
    QAIC_NAME(BUFFER_DATA_TYPE_INT32Q)
    QAIC_NAME(BUFFER_DATA_TYPE_INT32I)
    QAIC_NAME(BUFFER_DATA_TYPE_INT64I)
    QAIC_NAME(BUFFER_DATA_TYPE_INT8)
    QAIC_NAME(BUFFER_DATA_TYPE_UINT8)
    QAIC_NAME(BUFFER_DATA_TYPE_FLOAT64C)
    QAIC_NAME(BUFFER_DATA_TYPE_INVAL)
  }
#undef QAIC_NAME
  return "BUFFER_DATA_TYPE_INVAL";
}

}  // namespace qaic::container
