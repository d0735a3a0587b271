// SPDX-License-Identifier: Apache-2.0
// Small value types of the public runtime API (seed 001), shared by the program container, the
// runtime library and the tools, so a buffer's data type has one numbering everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qaic::rt {

// The element type of a BufferMapping. The numbering is stored in programqpc.bin, so it never
// changes; BUFFER_DATA_TYPE_INVAL marks a type the runtime cannot exchange.
enum QAicBufferDataTypeEnum : uint32_t {
  BUFFER_DATA_TYPE_FLOAT = 0,      // 32-bit float
  BUFFER_DATA_TYPE_FLOAT16 = 1,    // 16-bit float
  BUFFER_DATA_TYPE_INT8Q = 2,      // 8-bit quantized
  BUFFER_DATA_TYPE_UINT8Q = 3,     // unsigned 8-bit quantized
  BUFFER_DATA_TYPE_INT16Q = 4,     // 16-bit quantized
  BUFFER_DATA_TYPE_INT32Q = 5,     // 32-bit quantized
  BUFFER_DATA_TYPE_INT32I = 6,     // 32-bit index
  BUFFER_DATA_TYPE_INT64I = 7,     // 64-bit index
  BUFFER_DATA_TYPE_INT8 = 8,       // 8-bit
  BUFFER_DATA_TYPE_UINT8 = 9,      // unsigned 8-bit
  BUFFER_DATA_TYPE_FLOAT64C = 10,  // 64-bit complex float
  BUFFER_DATA_TYPE_INVAL = 11,
};

// Direction of a buffer from the user's point of view: inputs go to the device.
enum QAicBufferIoTypeEnum : uint32_t {
  BUFFER_IO_TYPE_INPUT = 0,
  BUFFER_IO_TYPE_OUTPUT = 1,
  BUFFER_IO_TYPE_INVAL = 2,
};

// A buffer and its length in bytes. Non-owning.
struct QData {
  std::size_t size = 0;
  uint8_t* data = nullptr;
};

// Opaque handle to the internal program container (its definition is private to libqaic).
struct QAicQpcObj;

}  // namespace qaic::rt
